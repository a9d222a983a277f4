//! The topology figure's data: coordinates, groups, traffic and spill warnings.

use planner_core::figures::topology_map::{domain_bytes, topology_map, MAX_DRAWN_NODES};
use planner_core::input::layout::Layout;
use planner_core::parallel::topology::{Domain, GroupKind, GroupPlacement, RankGrid, RankOrder};
use planner_core::resolve::presets::{article_mesh_scenario, default_scenario};
use planner_core::time::collectives::Collective;
use planner_core::time::cost::CostOptions;
use proptest::prelude::*;

#[test]
fn article_mesh_keeps_tp_in_node_and_spreads_dp() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let map = topology_map(&sc, &model, &CostOptions::default());
    assert_eq!(map.world_size, 512);
    assert_eq!(map.drawn_nodes, 64);
    assert_eq!(map.gpus.len(), 512);
    assert!(map.warnings.is_empty(), "{:?}", map.warnings);
    let t = |k: GroupKind| map.traffic.iter().find(|t| t.kind == k).expect("kind");
    let tp = t(GroupKind::Tp);
    assert_eq!(tp.placement.domain, Domain::IntraNode);
    assert!(tp.inter_node_edges.is_empty());
    assert_eq!(tp.intra_node_nodes.len(), 64);
    assert_eq!(tp.inter_node_bytes_per_step, 0.0);
    assert!(tp.intra_node_bytes_per_step > 0.0);
    assert_eq!(tp.groups, 64);
    for k in [GroupKind::Dp, GroupKind::Pp, GroupKind::Cp, GroupKind::DpCp] {
        let g = t(k);
        assert!(g.crosses_nodes, "{k:?}");
        assert!(!g.inter_node_edges.is_empty(), "{k:?}");
        assert!(g.intra_node_nodes.is_empty(), "{k:?}");
    }
    // PP is a chain: stage s on node-block s talks to s+1 only (3 links per pipeline).
    let pp = t(GroupKind::Pp);
    assert_eq!(pp.placement.domain, Domain::InterNode);
    // CP stride 8 → cp neighbours are adjacent nodes; DP stride 32 → 4 nodes apart.
    assert!(t(GroupKind::Cp).inter_node_edges.contains(&(0, 1)));
    assert!(t(GroupKind::Dp).inter_node_edges.contains(&(0, 4)));
    assert!(pp.inter_node_edges.contains(&(0, 16)));
    assert!(!pp.inter_node_edges.contains(&(0, 48)), "PP does not wrap");
}

#[test]
fn every_gpu_appears_once_and_its_coordinates_give_its_rank() {
    let sc = article_mesh_scenario();
    let model = sc.model_spec().expect("model");
    let map = topology_map(&sc, &model, &CostOptions::default());
    let grid = RankGrid::of(&sc.layout, RankOrder::default());
    let mut seen = vec![false; 512];
    for cell in &map.gpus {
        let r = cell.rank.expect("used");
        assert_eq!(r, u64::from(cell.node) * 8 + u64::from(cell.slot));
        assert!(!seen[r as usize]);
        seen[r as usize] = true;
        assert_eq!(grid.rank(&cell.coords.expect("coords")), r);
        assert_eq!(cell.groups.len(), GroupKind::ALL.len());
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn tp_numbered_across_nodes_is_warned() {
    let mut sc = default_scenario();
    sc.layout = Layout {
        dp: 8,
        tp: 8,
        ..Layout::default()
    };
    let model = sc.model_spec().expect("model");
    let opts = CostOptions {
        rank_order: RankOrder::parse("dp-tp-cp-pp").expect("order"),
        ..CostOptions::default()
    };
    let map = topology_map(&sc, &model, &opts);
    assert!(map
        .warnings
        .iter()
        .any(|w| w.kind == GroupKind::Tp && w.rule == "tp_spans_nodes"));
    let tp = map
        .traffic
        .iter()
        .find(|t| t.kind == GroupKind::Tp)
        .expect("tp");
    assert!(tp.crosses_nodes);
    assert!(tp.inter_node_bytes_per_step > 0.0);
}

#[test]
fn large_clusters_are_truncated_with_a_note() {
    let mut sc = article_mesh_scenario();
    sc.cluster.nodes = 128;
    sc.layout.dp = 8;
    let model = sc.model_spec().expect("model");
    let map = topology_map(&sc, &model, &CostOptions::default());
    assert_eq!(map.drawn_nodes, MAX_DRAWN_NODES);
    assert_eq!(map.gpus.len(), 64 * 8);
    assert!(map
        .note
        .as_deref()
        .unwrap_or("")
        .contains("first 64 of 128"));
}

#[test]
fn hierarchical_all_reduce_splits_bytes_by_level() {
    // 4 nodes × 8: intra RS + AG move 2·7/8·B; inter all-reduce of B/8 over 4 moves 2·3/4·B/8.
    let g = GroupPlacement {
        kind: GroupKind::DpCp,
        size: 32,
        per_node: 8,
        nodes: 4,
        domain: Domain::Hierarchical,
    };
    let (intra, inter) = domain_bytes(Collective::AllReduce, 8e9, &g);
    assert!((intra - 2.0 * 7.0 / 8.0 * 8e9).abs() < 1.0);
    assert!((inter - 2.0 * 3.0 / 4.0 * 1e9).abs() < 1.0);
}

proptest! {
    #[test]
    fn coordinates_round_trip_and_group_ordinals_partition(
        tp in 1u32..5, cp in 1u32..4, dp in 1u32..5, pp in 1u32..4, ep_pick in 0usize..16,
        order in prop::sample::select(vec!["tp-cp-dp-pp", "dp-tp-cp-pp", "pp-dp-cp-tp", "cp-pp-tp-dp"]),
    ) {
        // MoE parallel folding: expert_tp ∈ {1, tp}, ep any divisor of tp·cp·dp / expert_tp.
        let expert_tp = if ep_pick % 2 == 0 { 1 } else { tp };
        let room = tp * cp * dp / expert_tp;
        let eps: Vec<u32> = (1..=room).filter(|e| room % e == 0).collect();
        let ep = eps[(ep_pick / 2) % eps.len()];
        let layout = Layout { tp, cp, dp, pp, ep, expert_tp, ..Layout::default() };
        let order = RankOrder::parse(order).expect("order");
        let grid = RankGrid::of(&layout, order);
        let world = grid.world();
        for kind in GroupKind::ALL {
            let size = match kind {
                GroupKind::Tp => u64::from(tp),
                GroupKind::Cp => u64::from(cp),
                GroupKind::Dp => u64::from(dp),
                GroupKind::Pp => u64::from(pp),
                GroupKind::Ep => u64::from(ep),
                GroupKind::DpCp => u64::from(cp * dp),
                GroupKind::ExpertDp => u64::from(room / ep),
                GroupKind::ExpertTp => u64::from(expert_tp),
            };
            let mut count = vec![0u64; (world / size) as usize];
            for r in 0..world {
                let c = grid.coords(r);
                prop_assert_eq!(grid.rank(&c), r);
                let o = grid.group_ordinal(kind, &c);
                prop_assert!(o < world / size, "{:?} ordinal {} of {}", kind, o, world / size);
                count[o as usize] += 1;
                // Walking the ring stays in the group and comes back after `size` steps.
                if kind != GroupKind::Pp && size > 1 {
                    let mut x = r;
                    for _ in 0..size {
                        x = grid.next_in_group(kind, x).expect("ring");
                        prop_assert_eq!(grid.group_ordinal(kind, &grid.coords(x)), o);
                    }
                    prop_assert_eq!(x, r);
                }
            }
            prop_assert!(count.iter().all(|&n| n == size), "{:?} {:?}", kind, count);
        }
    }
}

#[test]
fn wide_nodes_are_truncated_without_panicking() {
    let mut sc = default_scenario();
    sc.cluster.gpus_per_node = 100_000;
    sc.cluster.nodes = 1_000_000;
    sc.layout = Layout {
        dp: 1_000_000,
        tp: 100_000,
        ..Layout::default()
    };
    let model = sc.model_spec().expect("model");
    let map = topology_map(&sc, &model, &CostOptions::default());
    assert_eq!(map.gpus.len(), 64 * 64);
    assert!(map
        .note
        .as_deref()
        .unwrap_or("")
        .contains("first 64 of 100000 GPUs"));
}
