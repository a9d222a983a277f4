//! Teaching figures against closed forms: collective grids and bytes, the DDP
//! and FSDP timelines, the Megatron MLP split, the causal CP grid and MoE routing.

use planner_core::figures::breakdown::{step_breakdown, SegmentKind};
use planner_core::figures::teaching::{
    collective_demo, collective_figure, cp_attention, cp_attention_for, ddp_overlap_demo,
    ep_routing, fsdp_lanes, megatron_mlp_split, strategy_sketches, CpAssignment, FsdpLane,
};
use planner_core::input::layout::ZeroStage;
use planner_core::parallel::topology::{Domain, GroupKind};
use planner_core::resolve::presets::{
    article_70b_scenario, article_mesh_scenario, default_scenario, model_preset,
};
use planner_core::time::collectives::{Collective, CommModel};
use planner_core::time::comms::Purpose;
use planner_core::time::cost::{CostOptions, StepModel};
use proptest::prelude::*;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-30)
}

#[test]
fn reduce_scatter_leaves_each_rank_its_shard_of_the_sum() {
    let d = collective_demo(Collective::ReduceScatter, 4, &[]).expect("demo");
    for (r, row) in d.after.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            match cell {
                Some(cell) if c == r => {
                    assert_eq!(cell.chunk as usize, r);
                    assert_eq!(cell.from, vec![0, 1, 2, 3]);
                }
                None if c != r => {}
                other => panic!("rank {r} slot {c}: {other:?}"),
            }
        }
    }
    // All-reduce: every rank every chunk summed; before each rank only its own.
    let ar = collective_demo(Collective::AllReduce, 4, &[]).expect("demo");
    assert!(ar
        .after
        .iter()
        .flatten()
        .all(|c| c.as_ref().map(|c| c.from.len()) == Some(4)));
    assert!(ar
        .before
        .iter()
        .flatten()
        .all(|c| c.as_ref().map(|c| c.from.len()) == Some(1)));
    assert!(close(ar.busbw_factor, 1.5, 1e-12));
}

#[test]
fn all_gather_and_all_to_all_grids() {
    let ag = collective_demo(Collective::AllGather, 4, &[]).expect("demo");
    assert_eq!(
        ag.before.iter().flatten().filter(|c| c.is_some()).count(),
        4
    );
    for row in &ag.after {
        for (c, cell) in row.iter().enumerate() {
            let cell = cell.as_ref().expect("full");
            assert_eq!(cell.from, vec![c as u32]);
        }
    }
    // All-to-all transposes: what rank c held for r is what r holds from c.
    let a2a = collective_demo(Collective::AllToAll, 4, &[]).expect("demo");
    for r in 0..4 {
        for c in 0..4 {
            let before = a2a.before[c][r].as_ref().expect("b");
            let after = a2a.after[r][c].as_ref().expect("a");
            assert_eq!(before.from, after.from);
            assert_eq!(before.chunk, r as u32);
            assert_eq!(after.chunk, r as u32);
        }
    }
    assert_eq!(
        collective_demo(Collective::AllToAll, 1, &[]).map_err(|e| e.field),
        Err("ranks".to_string())
    );
}

#[test]
fn ddp_all_reduce_bytes_each_rank_sends_are_two_n_minus_one_over_n() {
    let sc = article_70b_scenario();
    let model = sc.model_spec().expect("model");
    let figs = collective_figure(&sc, &model, &CostOptions::default());
    assert_eq!(figs.len(), 4);
    let ar = &figs[0];
    assert_eq!(ar.op, Collective::AllReduce);
    let u = ar
        .uses
        .iter()
        .find(|u| u.purpose == Purpose::GradAllReduce)
        .expect("grad all-reduce");
    // Ψ = 70e9 BF16 gradients over 64 ranks.
    assert!(close(u.message_bytes, 140e9, 1e-9));
    assert_eq!(u.ranks, 64);
    assert!(close(
        u.bytes_sent_per_rank_per_call,
        2.0 * 63.0 / 64.0 * 140e9,
        1e-12
    ));
    assert!(figs[2].uses.is_empty(), "DDP gathers nothing");
}

#[test]
fn six_sketches_match_the_article() {
    let s = strategy_sketches();
    let ids: Vec<&str> = s.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["ddp", "fsdp", "tp", "cp", "pp", "ep"]);
    // PP: one layer group per GPU; EP: one expert per GPU; TP: same batch on all.
    assert!(s[4]
        .gpus
        .iter()
        .enumerate()
        .all(|(g, x)| x.layers == [g as u32 + 1; 2]));
    assert!(s[5]
        .gpus
        .iter()
        .enumerate()
        .all(|(g, x)| x.expert == Some(g as u32)));
    assert!(s[2].gpus.iter().all(|x| x.batch.of == 1));
}

#[test]
fn ddp_timeline_waits_longer_on_the_slow_link_and_matches_cost() {
    // 64 nodes × 1 GPU: the DP group is network-only, so the slow timeline is the layout's.
    let mut sc = article_70b_scenario();
    sc.cluster.nodes = 64;
    sc.cluster.gpus_per_node = 1;
    let model = sc.model_spec().expect("model");
    let opts = CostOptions::default();
    let d = ddp_overlap_demo(&sc, &model, &opts);
    assert_eq!(d.ranks, 64);
    assert_eq!(d.current_domain, Domain::InterNode);
    assert!(close(d.grad_bytes, 140e9, 1e-9));
    assert_eq!(d.fast.blocks.len(), 4);
    assert!(d.slow.exposed_wait_s > d.fast.exposed_wait_s);
    let step = StepModel::new(&model, &sc, opts);
    let cost = step.evaluate(&sc.layout);
    let item = cost
        .comms
        .iter()
        .find(|i| i.purpose == Purpose::GradAllReduce)
        .expect("item");
    assert!(close(
        d.slow.all_reduce_total_s,
        item.seconds_per_step,
        1e-9
    ));
    for t in [&d.fast, &d.slow] {
        // The wait is at least what cannot overlap, and the last bucket.
        let per_bucket = t.all_reduce_total_s / (d.grad_bytes / d.bucket_bytes).ceil();
        assert!(
            t.exposed_wait_s + 1e-12 >= (t.all_reduce_total_s - t.backward_end_s).max(per_bucket)
        );
        let buckets: f64 = t.blocks.iter().map(|b| b.buckets).sum();
        assert!(close(
            buckets,
            (d.grad_bytes / d.bucket_bytes).ceil(),
            1e-12
        ));
        for w in t.blocks.windows(2) {
            assert!(w[1].all_reduce_start_s >= w[0].all_reduce_end_s - 1e-12);
            assert!(
                w[0].layers[0] > w[1].layers[1],
                "backward runs last layers first"
            );
        }
        assert_eq!(t.blocks[0].layers[1], 80);
        assert_eq!(t.blocks[3].layers[0], 1);
    }
}

#[test]
fn fsdp_lanes_follow_one_layer() {
    let mut sc = article_70b_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    let model = sc.model_spec().expect("model");
    let f = fsdp_lanes(&sc, &model, &CostOptions::default());
    assert_eq!(f.ranks, 64);
    assert!(!f.ranks_assumed);
    assert!(close(f.layer_params, 70e9 / 80.0, 1e-9));
    let lanes: Vec<FsdpLane> = f.bars.iter().map(|b| b.lane).collect();
    assert_eq!(
        lanes,
        [
            FsdpLane::AllGatherForward,
            FsdpLane::Forward,
            FsdpLane::AllGatherBackward,
            FsdpLane::Backward,
            FsdpLane::ReduceScatter
        ]
    );
    for w in f.bars.windows(2) {
        assert_eq!(w[0].end_s, w[1].start_s);
    }
    // Backward is twice forward; both all-gathers move the full layer's BF16 weights.
    let dur = |i: usize| f.bars[i].end_s - f.bars[i].start_s;
    assert!(close(dur(3), 2.0 * dur(1), 1e-9));
    assert!(close(f.bars[0].message_bytes, 2.0 * 70e9 / 80.0, 1e-9));
    let comm = CommModel::assumed(&sc.cluster);
    let step = StepModel::new(&model, &sc, CostOptions::default());
    let g = *step.placement(&sc.layout).group(GroupKind::DpCp);
    assert!(close(
        dur(0),
        comm.time_s(Collective::AllGather, f.bars[0].message_bytes, &g),
        1e-12
    ));
    // The shard is 16 B/param over 64 ranks, held all step.
    assert!(f
        .memory
        .iter()
        .all(|m| close(m.shard_bytes, 16.0 * 70e9 / 80.0 / 64.0, 1e-9)));
    assert_eq!(f.memory.last().map(|m| m.gathered_weight_bytes), Some(0.0));
}

#[test]
fn megatron_mlp_split_shapes_and_one_all_reduce() {
    let m = model_preset("gpt3-175b").expect("gpt3");
    let s = megatron_mlp_split(&m, 2, 2048, 2.0).expect("split");
    assert_eq!((s.a.rows, s.a.cols), (12288, 4 * 12288 / 2));
    assert_eq!((s.b.rows, s.b.cols), (4 * 12288 / 2, 12288));
    assert_eq!((s.y.rows, s.y.cols), (2048, 24576));
    let z = 2048.0 * 12288.0 * 2.0;
    assert_eq!(s.forward.len(), 1);
    assert_eq!(s.forward[0].message_bytes, z);
    // Two ranks: all-reduce sends 2(n−1)/n = 1 × the size.
    assert_eq!(s.forward[0].bytes_sent_per_rank, z);
    // Sequence parallel sends the same bytes: (n−1)/n for the all-gather and the reduce-scatter.
    let sp: f64 = s
        .sequence_parallel_forward
        .iter()
        .map(|c| c.bytes_sent_per_rank)
        .sum();
    assert_eq!(sp, s.forward[0].bytes_sent_per_rank);
    // Llama's SwiGLU: gate and up both column-parallel.
    let l = model_preset("llama-3.1-70b").expect("llama");
    let s = megatron_mlp_split(&l, 8, 4096, 2.0).expect("split");
    assert_eq!((s.a.rows, s.a.cols), (8192, 2 * 28672 / 8));
    assert_eq!(
        megatron_mlp_split(&l, 5, 4096, 2.0).map_err(|e| e.field),
        Err("tp".to_string())
    );
}

#[test]
fn cp_grid_for_the_article_mesh() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let c = cp_attention_for(&sc, &model).expect("cp");
    assert_eq!(c.cp, 4);
    assert_eq!(c.chunks, 8);
    assert_eq!(c.computed_blocks, 36);
    // Llama 70B: 8 K/V heads × 128 × (K + V), one per TP rank at TP 8, BF16; 32K/4 tokens.
    assert!(close(
        c.kv_bytes_per_step,
        8192.0 * 2.0 * 128.0 * 2.0,
        1e-12
    ));
    assert_eq!(c.zigzag.chunks_of_rank[0], [0, 7]);
    assert_eq!(c.plain.chunks_of_rank[3], [6, 7]);
    assert_eq!(c.zigzag.work_per_rank, vec![8.0; 4]);
    assert_eq!(c.plain.work_per_rank, vec![2.0, 6.0, 10.0, 14.0]);
}

proptest! {
    #[test]
    fn causal_grid_counts_and_zigzag_balance(cp in 1u32..=16, per in 1u32..64) {
        let c = cp_attention(cp, 2 * cp * per, 1.0).expect("cp");
        for grid in [&c.plain, &c.zigzag] {
            let computed = grid.blocks.iter().filter(|b| b.computed).count() as u32;
            prop_assert_eq!(computed, cp * (2 * cp + 1));
            prop_assert_eq!(c.computed_blocks, computed);
            let total: f64 = grid.work_per_rank.iter().sum();
            prop_assert_eq!(total, f64::from(2 * cp * 2 * cp) / 2.0);
            for b in grid.blocks.iter() {
                prop_assert!(b.ring_step < cp);
                let own = grid.chunks_of_rank[b.rank as usize].contains(&b.k);
                prop_assert_eq!(own, b.ring_step == 0);
            }
        }
        prop_assert_eq!(c.zigzag.assignment, CpAssignment::ZigZag);
        let w0 = c.zigzag.work_per_rank[0];
        prop_assert!(c.zigzag.work_per_rank.iter().all(|&w| w == w0));
        prop_assert_eq!(c.zigzag.imbalance, 1.0);
        if cp >= 2 {
            prop_assert!(c.plain.imbalance > 1.0);
        }
    }

    #[test]
    fn routing_drops_exactly_the_overflow(seed in any::<u64>(), ep_pick in 0usize..4, tokens_per in 1u32..8, cf in 0.5f64..2.0) {
        let m = model_preset("mixtral-8x7b").expect("mixtral");
        let ep = [1u32, 2, 4, 8][ep_pick];
        let tokens = ep * tokens_per;
        let r = ep_routing(&m, ep, cf, tokens, seed, 2.0).expect("routing");
        prop_assert_eq!(r.capacity, (cf * f64::from(tokens) * 2.0 / 8.0).ceil() as u32);
        let routed: u32 = r.loads.iter().map(|l| l.routed).sum();
        prop_assert_eq!(routed, tokens * 2);
        let overflow: u32 = r.loads.iter().map(|l| l.routed.saturating_sub(r.capacity)).sum();
        prop_assert_eq!(r.dropped, overflow);
        let flagged = r.routes.iter().flat_map(|t| t.dropped.iter()).filter(|&&d| d).count() as u32;
        prop_assert_eq!(flagged, overflow);
        for t in &r.routes {
            prop_assert_eq!(t.experts.len(), 2);
            prop_assert!(t.experts[0] != t.experts[1]);
        }
        let sent: u32 = r.ranks.iter().map(|x| x.tokens_sent).sum();
        let received: u32 = r.ranks.iter().map(|x| x.tokens_received).sum();
        prop_assert_eq!(sent, received);
        for x in &r.ranks {
            prop_assert_eq!(x.dispatch_bytes_sent, f64::from(x.tokens_sent) * 4096.0 * 2.0);
        }
        prop_assert_eq!(&r, &ep_routing(&m, ep, cf, tokens, seed, 2.0).expect("again"));
    }
}

#[test]
fn dense_model_routes_the_articles_four_experts() {
    let m = model_preset("llama-3.1-70b").expect("llama");
    let r = ep_routing(&m, 4, 1.25, 16, 7, 2.0).expect("routing");
    assert!(r.illustrative);
    assert_eq!((r.experts, r.top_k, r.capacity), (4, 1, 5));
    assert_eq!(r.loads.iter().map(|l| l.kept + l.padded).sum::<u32>(), 20);
    let mix = model_preset("mixtral-8x7b").expect("mixtral");
    assert_eq!(
        ep_routing(&mix, 3, 1.0, 12, 0, 2.0).map_err(|e| e.field),
        Err("ep".to_string())
    );
    assert_eq!(
        ep_routing(&mix, 4, 1.0, 10, 0, 2.0).map_err(|e| e.field),
        Err("tokens".to_string())
    );
}

#[test]
fn step_breakdown_segments_add_up_and_tp_stays_on_nvlink() {
    let sc = default_scenario();
    let model = sc.model_spec().expect("model");
    let b = step_breakdown(&sc, &model, &CostOptions::default());
    let sum: f64 = b.segments.iter().map(|s| s.seconds).sum();
    assert!(close(sum, b.total_s, 1e-9), "{sum} vs {}", b.total_s);
    let last = b.segments.last().expect("seg");
    assert!(close(last.offset_s + last.seconds, b.total_s, 1e-9));
    let tp = b
        .segments
        .iter()
        .find(|s| s.kind == SegmentKind::TpComm)
        .expect("tp");
    assert!(tp.seconds > 0.0);
    for row in &b.volume {
        if row.group == GroupKind::Tp {
            assert_eq!(row.inter_node_bytes, 0.0);
            assert!(close(row.intra_node_bytes, row.bus_bytes_per_step, 1e-12));
        }
    }
    assert!(b.intra_node_bytes > 0.0 && b.inter_node_bytes > 0.0);
    let by_op: f64 = b
        .volume_by_op
        .iter()
        .map(|v| v.intra_node_bytes + v.inter_node_bytes)
        .sum();
    assert!(close(by_op, b.intra_node_bytes + b.inter_node_bytes, 1e-12));
}

#[test]
fn every_figure_draws_for_the_presets() {
    use planner_core::figures::teaching::teaching_figures;
    for sc in [
        default_scenario(),
        article_70b_scenario(),
        article_mesh_scenario(),
    ] {
        let model = sc.model_spec().expect("model");
        let f = teaching_figures(&sc, &model, &CostOptions::default());
        assert_eq!(f.collectives.len(), 4);
        assert!(f.mlp.is_ok() && f.cp.is_ok() && f.ep.is_ok());
        let json = serde_json::to_string(&f).expect("json");
        let back: planner_core::figures::teaching::TeachingFigures =
            serde_json::from_str(&json).expect("parse");
        assert_eq!(back.sketches, f.sketches);
    }
    let mut sc = default_scenario();
    sc.model = planner_core::input::scenario::ModelChoice::Preset("mixtral-8x7b".into());
    sc.layout.ep = 8;
    let model = sc.model_spec().expect("model");
    let f = teaching_figures(&sc, &model, &CostOptions::default());
    let ep = f.ep.expect("ep");
    assert_eq!((ep.ep, ep.experts, ep.top_k, ep.tokens), (8, 8, 2, 16));
    assert!(f.collectives[3]
        .uses
        .iter()
        .any(|u| u.purpose == Purpose::EpDispatchCombine));
}

#[test]
fn ddp_current_timeline_uses_the_layouts_two_level_group() {
    // Article: DP 64 over 8 nodes × 8 GPUs is two-level: faster than a flat network ring.
    // (Not necessarily slower than a flat 64-rank NVLink ring: that pays 126 latency steps per bucket.)
    let sc = article_70b_scenario();
    let model = sc.model_spec().expect("model");
    let opts = CostOptions::default();
    let d = ddp_overlap_demo(&sc, &model, &opts);
    assert_eq!(d.current.domain, Domain::Hierarchical);
    assert_eq!(d.current_domain, Domain::Hierarchical);
    assert!(d.current.all_reduce_total_s < d.slow.all_reduce_total_s);
    let cost = StepModel::new(&model, &sc, opts).evaluate(&sc.layout);
    let item = cost
        .comms
        .iter()
        .find(|i| i.purpose == Purpose::GradAllReduce)
        .expect("item");
    assert!(close(
        d.current.all_reduce_total_s,
        item.seconds_per_step,
        1e-9
    ));
}

#[test]
fn oversized_inputs_are_refused_by_field() {
    let mut m = model_preset("mixtral-8x7b").expect("mixtral");
    if let Some(moe) = m.moe.as_mut() {
        moe.routed_experts = 1 << 30;
    }
    assert_eq!(
        ep_routing(&m, 1, 1.0, 16, 0, 2.0).map_err(|e| e.field),
        Err("model.moe.routed_experts".to_string())
    );
    assert_eq!(
        cp_attention(64, 1 << 20, 1.0).map_err(|e| e.field),
        Err("cp".to_string())
    );
    assert_eq!(
        cp_attention(4, 7, 1.0).map_err(|e| e.field),
        Err("seq_len".to_string())
    );
    assert_eq!(
        ep_routing(
            &model_preset("mixtral-8x7b").expect("m"),
            2,
            f64::NAN,
            16,
            0,
            2.0
        )
        .map_err(|e| e.field),
        Err("capacity_factor".to_string())
    );
}

#[test]
fn the_illustrative_routing_overflows_an_expert_as_the_article_draws() {
    use planner_core::figures::teaching::teaching_figures;
    let sc = default_scenario();
    let model = sc.model_spec().expect("model");
    let ep = teaching_figures(&sc, &model, &CostOptions::default())
        .ep
        .expect("ep");
    assert!(ep.illustrative);
    // 16 tokens on 4 experts, capacity ceil(1.25 × 16 / 4) = 5: loads 5, 3, 1, 7.
    assert_eq!(ep.capacity, 5);
    let loads: Vec<u32> = ep.loads.iter().map(|l| l.routed).collect();
    assert_eq!(loads, [5, 3, 1, 7]);
    assert_eq!((ep.dropped, ep.padded), (2, 6));
}
