//! Communication volumes against closed forms, and group placement on domains.

use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::layout::{Layout, Recompute, ZeroStage};
use planner_core::input::model::ModelSpec;
use planner_core::input::precision::Precision;
use planner_core::input::scenario::{Overheads, Training};
use planner_core::parallel::topology::{Domain, GroupKind, Placement, RankOrder};
use planner_core::resolve::presets::model_preset;
use planner_core::time::collectives::{AlphaBeta, Collective, CommModel};
use planner_core::time::comms::{step_comms, CommInputs, Purpose};

fn llama70() -> ModelSpec {
    let mut m = model_preset("llama-3.1-70b").expect("preset");
    m.nominal_params = Some(70e9);
    m
}

fn cluster(nodes: u32) -> Cluster {
    Cluster::of(gpu_preset("h100-sxm").expect("gpu"), nodes)
}

fn comms_for(
    layout: &Layout,
    nodes: u32,
    global_batch: u32,
) -> planner_core::time::comms::StepComms {
    let model = llama70();
    let c = cluster(nodes);
    let inp = CommInputs::new(
        &model,
        &Precision::default(),
        &Training {
            seq_len: 4096,
            global_batch,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        &Overheads::default(),
    );
    let placement = Placement::of(layout, c.gpus_per_node, RankOrder::default());
    step_comms(&inp, layout, &placement, &CommModel::assumed(&c))
}

fn dp_layout(dp: u32, zero: ZeroStage) -> Layout {
    Layout {
        dp,
        zero,
        ..Layout::default()
    }
}

#[test]
fn ddp_all_reduce_moves_2_n_minus_1_over_n_of_the_gradients() {
    let n = 64.0;
    let c = comms_for(&dp_layout(64, ZeroStage::Ddp), 8, 64);
    let grad_bytes = 70e9 * 2.0;
    let got = c.bus_bytes(&[Purpose::GradAllReduce]);
    let want = 2.0 * (n - 1.0) / n * grad_bytes;
    assert!((got - want).abs() / want < 1e-12, "{got} vs {want}");
    assert_eq!(c.get(Purpose::GradAllReduce).map(|i| i.ranks), Some(64));
}

#[test]
fn zero1_moves_the_same_as_ddp_and_zero3_one_and_a_half_times() {
    let ddp = comms_for(&dp_layout(64, ZeroStage::Ddp), 8, 64);
    let z1 = comms_for(&dp_layout(64, ZeroStage::Zero1), 8, 64);
    let z3 = comms_for(&dp_layout(64, ZeroStage::Zero3), 8, 64);
    let all = [
        Purpose::GradAllReduce,
        Purpose::GradReduceScatter,
        Purpose::ParamAllGather,
        Purpose::ParamAllGatherForward,
        Purpose::ParamAllGatherBackward,
    ];
    let v_ddp = ddp.bus_bytes(&all);
    let v_z1 = z1.bus_bytes(&all);
    let v_z3 = z3.bus_bytes(&all);
    assert!((v_z1 / v_ddp - 1.0).abs() < 1e-12);
    // Rajbhandari et al. 2020 §7.2.2: 3Ψ against 2Ψ with one micro-batch.
    assert!((v_z3 / v_ddp - 1.5).abs() < 1e-12, "{}", v_z3 / v_ddp);
}

#[test]
fn zero3_regathers_every_micro_batch() {
    // global batch 256 over dp 64, micro-batch 1: 4 micro-batches.
    let z3 = comms_for(&dp_layout(64, ZeroStage::Zero3), 8, 256);
    let ag = z3.get(Purpose::ParamAllGatherForward).expect("ag");
    assert_eq!(ag.calls_per_step, 4.0);
}

#[test]
fn tensor_parallel_is_two_all_reduces_per_layer_forward_and_two_backward() {
    let layout = Layout {
        tp: 8,
        dp: 8,
        ..Layout::default()
    };
    let c = comms_for(&layout, 8, 8);
    let fwd = c.get(Purpose::TpForward).expect("tp fwd");
    let bwd = c.get(Purpose::TpBackward).expect("tp bwd");
    assert_eq!(fwd.op, Collective::AllReduce);
    // 80 layers × 1 micro-batch × 2.
    assert_eq!(fwd.calls_per_step, 160.0);
    assert_eq!(bwd.calls_per_step, 160.0);
    // Message: b·s·h·2 bytes.
    assert_eq!(fwd.message_bytes, 4096.0 * 8192.0 * 2.0);
    assert_eq!(fwd.domain, Domain::IntraNode);
    assert!(c.get(Purpose::TpRecompute).is_none());

    let full = Layout {
        recompute: Recompute::Full,
        ..layout.clone()
    };
    let c = comms_for(&full, 8, 8);
    assert_eq!(
        c.get(Purpose::TpRecompute).map(|i| i.calls_per_step),
        Some(160.0)
    );

    // Sequence parallel: same volume, as all-gather + reduce-scatter.
    let sp = Layout {
        sequence_parallel: true,
        ..layout
    };
    let c_sp = comms_for(&sp, 8, 8);
    let c_ar = comms_for(
        &Layout {
            tp: 8,
            dp: 8,
            ..Layout::default()
        },
        8,
        8,
    );
    let tp = [Purpose::TpForward, Purpose::TpBackward];
    assert!((c_sp.bus_bytes(&tp) / c_ar.bus_bytes(&tp) - 1.0).abs() < 1e-12);
    assert!(c_sp
        .iter()
        .any(|i| i.purpose == Purpose::TpForward && i.op == Collective::ReduceScatter));
}

#[test]
fn article_mesh_places_tp_on_nvlink_and_the_rest_across_nodes() {
    let layout = Layout {
        tp: 8,
        pp: 4,
        cp: 4,
        dp: 4,
        ..Layout::default()
    };
    let p = Placement::of(&layout, 8, RankOrder::default());
    assert_eq!(p.group(GroupKind::Tp).domain, Domain::IntraNode);
    for kind in [GroupKind::Cp, GroupKind::Dp, GroupKind::Pp, GroupKind::DpCp] {
        assert_eq!(p.group(kind).domain, Domain::InterNode, "{kind:?}");
    }
    assert_eq!(p.group(GroupKind::DpCp).size, 16);
    assert_eq!(p.group(GroupKind::Pp).nodes, 4);
    assert!(p.warnings(8).is_empty());
}

#[test]
fn small_tp_leaves_room_for_a_two_level_data_parallel_group() {
    // 2 nodes × 8, tp 4, dp 4: DP members are ranks 0,4,8,12 → 2 per node on 2 nodes.
    let layout = Layout {
        tp: 4,
        dp: 4,
        ..Layout::default()
    };
    let p = Placement::of(&layout, 8, RankOrder::default());
    let dp = p.group(GroupKind::Dp);
    assert_eq!(
        (dp.per_node, dp.nodes, dp.domain),
        (2, 2, Domain::Hierarchical)
    );
    assert_eq!(p.group(GroupKind::Tp).domain, Domain::IntraNode);
}

#[test]
fn tp_numbered_slowest_spans_nodes_and_is_flagged() {
    let layout = Layout {
        tp: 8,
        dp: 8,
        ..Layout::default()
    };
    let order = RankOrder::parse("dp-cp-tp-pp").expect("order");
    let p = Placement::of(&layout, 8, order);
    assert_eq!(p.group(GroupKind::Tp).domain, Domain::InterNode);
    assert_eq!(p.group(GroupKind::Dp).domain, Domain::IntraNode);
    let w = p.warnings(8);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].rule, "tp_spans_nodes");
    // Larger than a node: always spans.
    let big = Layout {
        tp: 16,
        ..Layout::default()
    };
    let p = Placement::of(&big, 8, RankOrder::default());
    assert_eq!(p.group(GroupKind::Tp).domain, Domain::Hierarchical);
    assert_eq!(p.warnings(8)[0].rule, "tp_spans_nodes");
}

#[test]
fn expert_parallel_folds_into_context_and_data_ranks() {
    // Expert-TP = TP = 2: the expert-TP group is the TP group and EP folds into cp × dp.
    let layout = Layout {
        tp: 2,
        cp: 2,
        dp: 8,
        ep: 8,
        expert_tp: 2,
        ..Layout::default()
    };
    let p = Placement::of(&layout, 8, RankOrder::default());
    let ep = p.group(GroupKind::Ep);
    let edp = p.group(GroupKind::ExpertDp);
    assert_eq!(ep.size, 8);
    // EDP = tp·cp·dp / (etp·ep) = 32 / 16 = 2.
    assert_eq!(edp.size, 2);
    // EP ranks: cp stride 2 (2 of them), then dp stride 4 (4 of them): 0,2,4,6 | 8,... → 4 per node.
    assert_eq!((ep.per_node, ep.nodes), (4, 2));
    let (etp, tp) = (p.group(GroupKind::ExpertTp), p.group(GroupKind::Tp));
    assert_eq!(
        (etp.size, etp.per_node, etp.nodes, etp.domain),
        (tp.size, tp.per_node, tp.nodes, tp.domain)
    );
}

#[test]
fn expert_parallel_with_expert_tp_one_spans_the_tp_ranks() {
    // Megatron's expert rank generator with ETP = 1: EP takes the stage's fastest ranks,
    // the TP ranks first (parallel_state.py, order tp-ep-dp-pp).
    let layout = Layout {
        tp: 2,
        cp: 2,
        dp: 8,
        ep: 8,
        expert_tp: 1,
        ..Layout::default()
    };
    let p = Placement::of(&layout, 8, RankOrder::default());
    let ep = p.group(GroupKind::Ep);
    let edp = p.group(GroupKind::ExpertDp);
    // EP = ranks 0..7 (tp 2 × cp 2 × 2 of dp): one node.
    assert_eq!((ep.size, ep.per_node, ep.nodes), (8, 8, 1));
    // EDP = 32 / 8 = 4 ranks at stride 8: 0, 8, 16, 24, one per node.
    assert_eq!((edp.size, edp.per_node, edp.nodes), (4, 1, 4));
    assert_eq!(p.group(GroupKind::ExpertTp).size, 1);
}

#[test]
fn rank_order_rejects_bad_text() {
    assert!(RankOrder::parse("tp-cp-dp").is_err());
    assert!(RankOrder::parse("tp-tp-dp-pp").is_err());
    assert!(RankOrder::parse("tp-xx-dp-pp").is_err());
    assert_eq!(
        RankOrder::parse("tp-cp-ep-dp-pp").expect("megatron"),
        RankOrder::default()
    );
}

#[test]
fn alpha_beta_and_two_level_all_reduce() {
    let link = AlphaBeta {
        latency_s: 0.0,
        busbw_bytes_per_s: 100e9,
    };
    // 1 GB all-reduce on 8 ranks: 2·7/8 GB / 100 GB/s = 17.5 ms.
    let t = link.time_s(Collective::AllReduce, 1e9, 8);
    assert!((t - 0.0175).abs() < 1e-12);
    // A two-level all-reduce over 8 per node × 4 nodes beats a flat one over the network.
    let c = cluster(4);
    let model = CommModel::assumed(&c);
    let layout = dp_layout(32, ZeroStage::Ddp);
    let p = Placement::of(&layout, 8, RankOrder::default());
    let g = p.group(GroupKind::Dp);
    assert_eq!(g.domain, Domain::Hierarchical);
    let two_level = model.time_s(Collective::AllReduce, 1e9, g);
    let flat = model
        .link(
            Collective::AllReduce,
            planner_core::time::collectives::LinkDomain::InterNode,
        )
        .time_s(Collective::AllReduce, 1e9, 32);
    assert!(two_level < flat / 4.0, "{two_level} vs {flat}");
}

fn comms_model(
    model: &ModelSpec,
    layout: &Layout,
    nodes: u32,
    seq_len: u32,
    global_batch: u32,
) -> planner_core::time::comms::StepComms {
    let c = cluster(nodes);
    let inp = CommInputs::new(
        model,
        &Precision::default(),
        &Training {
            seq_len,
            global_batch,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        &Overheads::default(),
    );
    let placement = Placement::of(layout, c.gpus_per_node, RankOrder::default());
    step_comms(&inp, layout, &placement, &CommModel::assumed(&c))
}

#[test]
fn pipeline_sends_one_activation_each_way_per_micro_batch_and_chunk() {
    let layout = Layout {
        tp: 8,
        pp: 4,
        dp: 2,
        virtual_stages: 2,
        schedule: planner_core::input::layout::Schedule::Interleaved,
        sequence_parallel: true,
        ..Layout::default()
    };
    // 64 sequences / dp 2 = 32 micro-batches; × 2 directions × 2 chunks.
    let c = comms_model(&llama70(), &layout, 8, 4096, 64);
    let p = c.get(Purpose::PpActivations).expect("pp");
    assert_eq!(p.calls_per_step, 128.0);
    // b·s·h·2 bytes, split over TP by sequence parallelism.
    assert_eq!(p.message_bytes, 4096.0 * 8192.0 * 2.0 / 8.0);
    assert_eq!(p.domain, Domain::InterNode);
}

#[test]
fn ring_attention_passes_each_kv_block_cp_minus_1_times_forward_and_twice_backward() {
    let layout = Layout {
        tp: 8,
        cp: 4,
        dp: 2,
        sequence_parallel: true,
        ..Layout::default()
    };
    let c = comms_model(&llama70(), &layout, 8, 32_768, 2);
    let ring = c.get(Purpose::CpKvRing).expect("cp");
    // 80 layers × 1 micro-batch × (4−1) steps × (1 forward + 2 backward).
    assert_eq!(ring.calls_per_step, 80.0 * 3.0 * 3.0);
    // K and V of s/cp tokens: 8 KV heads × 128 split over tp = 8 → 1 head each, BF16.
    assert_eq!(ring.message_bytes, 8192.0 * 2.0 * 8.0 * 128.0 / 8.0 * 2.0);
}

#[test]
fn expert_parallel_dispatches_and_combines_top_k_copies_of_each_token() {
    let mixtral = model_preset("mixtral-8x7b").expect("mixtral");
    let layout = Layout {
        dp: 8,
        ep: 8,
        expert_tp: 1,
        ..Layout::default()
    };
    let c = comms_model(&mixtral, &layout, 1, 4096, 8);
    let a2a = c.get(Purpose::EpDispatchCombine).expect("ep");
    assert_eq!(a2a.op, Collective::AllToAll);
    // 32 MoE layers × (dispatch + combine) × (forward + backward).
    assert_eq!(a2a.calls_per_step, 32.0 * 4.0);
    // 4096 tokens × top-2 × hidden 4096 × 2 bytes, at the busiest of 8 ranks under random
    // dropless routing: 1 + √(2 ln 8) · √((7/8)/8192) = 1.0211 × the mean.
    let busiest = 1.0 + (2.0 * 8f64.ln()).sqrt() * (0.875 / 8192.0f64).sqrt();
    assert!((busiest - 1.0211).abs() < 1e-4);
    assert_eq!(a2a.message_bytes, 4096.0 * 2.0 * 4096.0 * 2.0 * busiest);
    assert_eq!(a2a.domain, Domain::IntraNode);
    // Expert gradients are reduced over dp·cp/ep = 1 rank: nothing to send.
    assert!(c.get(Purpose::ExpertGradAllReduce).is_none());
}

#[test]
fn two_level_all_reduce_is_the_sum_of_its_stages() {
    let c = cluster(4);
    let model = CommModel::assumed(&c);
    let layout = dp_layout(32, ZeroStage::Ddp);
    let g = *Placement::of(&layout, 8, RankOrder::default()).group(GroupKind::Dp);
    let (i, e) = (c.intra_node.clone(), c.inter_node.clone());
    let s = 1e9;
    // Each link at its measured bus bandwidth (input/link_efficiency.rs): H100's NVLink 4
    // reduce-scatter and all-gather at 20.6 of 25 GB/s per link, the 400 Gb/s NIC at 47 of 50.
    let i_busbw = i.bytes_per_s * 20.6 / 25.0;
    let e_busbw = e.bytes_per_s * 47.0 / 50.0;
    // Intra reduce-scatter + all-gather on 8 ranks, inter all-reduce of s/8 on 4 nodes.
    let want = 2.0 * (7.0 * i.latency_s + s * 7.0 / 8.0 / i_busbw)
        + 2.0 * 3.0 * e.latency_s
        + s / 8.0 * 2.0 * 3.0 / 4.0 / e_busbw;
    let got = model.alpha_beta_time_s(Collective::AllReduce, s, &g);
    assert!((got / want - 1.0).abs() < 1e-12, "{got} vs {want}");
    // On a node NCCL's tuner describes (H100: input/nccl_node.rs) the price is the tuner's
    // (time/nccl_algo.rs); the α–β two-level sum stands for measured links and other GPUs.
    let tuned = model.time_s(Collective::AllReduce, s, &g);
    assert_eq!(Some(tuned), model.nccl_time_s(Collective::AllReduce, s, &g));
    assert!(tuned < got, "{tuned} vs {got}");
}

/// The mesh search builds a step's items in two parts, each shared by the candidates that
/// differ only in what the other part reads (`comms::chained`); chained they must be the
/// whole step's items, in order and bit for bit, whatever the ZeRO stage and recompute, on
/// dense and MoE models, also where the items reach `MAX_ITEMS` (DeepSeek-V3 with TP,
/// expert-TP and CP under sequence parallel has 13-16 items at 4ff11ce, so `StepComms`
/// keeps the first 12 and both paths drop the same tail).
#[test]
fn the_two_parts_chained_are_the_step_items() {
    use planner_core::time::comms::{
        chained, data_parallel_comms, model_parallel_comms, StepComms, MAX_ITEMS,
    };
    for (name, ep, expert_tp) in [("llama-3.1-70b", 1, 1), ("deepseek-v3", 8, 2)] {
        let model = model_preset(name).expect("preset");
        let c = cluster(32);
        let inp = inputs_4k_by_256(&model);
        let comm = CommModel::assumed(&c);
        for zero in ZeroStage::ALL {
            for recompute in Recompute::ALL {
                let layout = Layout {
                    dp: 8,
                    tp: 2,
                    pp: 4,
                    cp: 4,
                    ep,
                    expert_tp,
                    micro_batch: 2,
                    zero,
                    recompute,
                    sequence_parallel: true,
                    ..Layout::default()
                };
                let placement = Placement::of(&layout, c.gpus_per_node, RankOrder::default());
                let whole = step_comms(&inp, &layout, &placement, &comm);
                let pace = inp.pace(&layout);
                let (mut dp, mut mp) = (StepComms::new(), StepComms::new());
                data_parallel_comms(&mut dp, &inp, &layout, &placement, &comm, &pace);
                model_parallel_comms(&mut mp, &inp, &layout, &placement, &comm, &pace);
                let parts: Vec<_> = chained(&dp, &mp).copied().collect();
                let items: Vec<_> = whole.iter().copied().collect();
                assert_eq!(parts, items, "{name} {zero:?} {recompute:?}");
                assert!(items.len() <= MAX_ITEMS);
            }
        }
    }
}

/// The largest step there is: DeepSeek-V3 with DeepSpeed's ZeRO-3 (its gather for the
/// recomputed forward too), full recompute, sequence parallel, TP and expert TP, PP, CP and EP
/// has every kind of item, and none is dropped (12 slots once dropped EP's all-to-all, the CP
/// ring and the PP sends of such layouts).
#[test]
fn the_largest_step_keeps_every_item() {
    use planner_core::time::comms::{Purpose, MAX_ITEMS};
    let model = model_preset("deepseek-v3").expect("preset");
    let c = cluster(32);
    let mut inp = inputs_4k_by_256(&model);
    inp.framework = planner_core::input::framework::Framework::DeepSpeed;
    let comm = CommModel::assumed(&c);
    let layout = Layout {
        dp: 8,
        tp: 2,
        pp: 4,
        cp: 4,
        ep: 8,
        expert_tp: 2,
        micro_batch: 2,
        zero: ZeroStage::Zero3,
        recompute: Recompute::Full,
        sequence_parallel: true,
        ..Layout::default()
    };
    let placement = Placement::of(&layout, c.gpus_per_node, RankOrder::default());
    let items = step_comms(&inp, &layout, &placement, &comm);
    assert_eq!(items.iter().count(), MAX_ITEMS);
    for purpose in [
        Purpose::EpDispatchCombine,
        Purpose::CpKvRing,
        Purpose::PpActivations,
        Purpose::ParamAllGatherRecompute,
    ] {
        assert!(
            items.iter().any(|i| i.purpose == purpose),
            "{purpose:?} priced"
        );
    }
}

/// Communication inputs of `model` at BF16, 4,096 tokens × a global batch of 256.
fn inputs_4k_by_256(model: &planner_core::input::model::ModelSpec) -> CommInputs {
    CommInputs::new(
        model,
        &Precision::default(),
        &Training {
            seq_len: 4096,
            global_batch: 256,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        &Overheads::default(),
    )
}

/// Megatron-Core sizes its gradient buckets itself: `max(40000000, 1000000 · dp·cp)` parameters
/// (megatron/training/training.py `get_model`), the first model chunk bucketed and every other
/// chunk one bucket; with gradient-reduce overlap off, one bucket per chunk.
#[test]
fn megatron_core_buckets_hold_max_40m_or_1m_per_dp_rank_parameters() {
    use planner_core::input::framework::Framework;
    use planner_core::input::layout::Schedule;
    use planner_core::input::overlap::Switch;
    let model = llama70();
    let c = cluster(16);
    let training = Training {
        seq_len: 4096,
        global_batch: 128,
        finetune: Default::default(),
        offload: Default::default(),
        packing: false,
    };
    let chunks = |overheads: &Overheads, layout: &Layout| {
        let inp = CommInputs::new(&model, &Precision::default(), &training, overheads);
        let placement = Placement::of(layout, c.gpus_per_node, RankOrder::default());
        let s = step_comms(&inp, layout, &placement, &CommModel::assumed(&c));
        let rs = s.get(Purpose::GradReduceScatter).expect("reduce-scatter");
        (rs.chunks_per_call, inp.dense_params)
    };
    // Megatron-LM's --overlap-grad-reduce is off by default: switched on here.
    let mut megatron = Overheads {
        framework: Framework::MegatronCore,
        ..Overheads::default()
    };
    megatron.overlap.grad_reduce = Switch::On;
    // DP 64 × PP 2 with 2 virtual stages: 64M parameters per bucket (1M · 64 > 40M).
    let layout = Layout {
        dp: 64,
        pp: 2,
        virtual_stages: 2,
        schedule: Schedule::Interleaved,
        zero: ZeroStage::Zero1,
        ..Layout::default()
    };
    let (got, params) = chunks(&megatron, &layout);
    let per_rank = params / 2.0;
    assert_eq!(got, (per_rank / 2.0 / 64e6).ceil() + 1.0);
    // DP 16: the 40M floor.
    let small = Layout {
        dp: 16,
        ..layout.clone()
    };
    let (got, _) = chunks(&megatron, &small);
    assert_eq!(got, (per_rank / 2.0 / 40e6).ceil() + 1.0);
    // Overlap off: bucket_size = None, one bucket per model chunk.
    let mut off = megatron.clone();
    off.overlap.grad_reduce = Switch::Off;
    assert_eq!(chunks(&off, &layout).0, 2.0);
    // The article's accounting keeps the scenario's byte-sized buckets (25 MB, fp32 gradients).
    let (got, _) = chunks(&Overheads::default(), &layout);
    let grad_bytes = Precision::default().grad_bytes;
    assert_eq!(got, (per_rank * grad_bytes / 25e6).ceil());
}
