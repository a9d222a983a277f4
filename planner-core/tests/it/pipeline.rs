//! Pipeline schedules: the simulation against the article's numbers and the closed forms.

use std::collections::HashSet;

use planner_core::parallel::pipeline::{
    bubble, forward_only_timeline, in_flight_micro_batches, timeline, OpKind, PipelineError,
    Schedule, Timeline,
};
use proptest::prelude::*;

/// `idle / grid == num / den` exactly, by cross-multiplication.
fn idle_is(t: &Timeline, num: u64, den: u64) -> bool {
    let grid = u64::from(t.stages) * t.makespan_ticks();
    t.idle_ticks() * den == num * grid
}

/// `(makespan − ideal) / ideal == num / den` exactly.
fn overhead_is(t: &Timeline, num: u64, den: u64) -> bool {
    let ideal = (0..t.stages).map(|s| t.busy_ticks(s)).max().unwrap_or(0);
    (t.makespan_ticks() - ideal) * den == num * ideal
}

#[test]
fn article_forward_figure_is_12_of_28_slots_idle() {
    let t = forward_only_timeline(4, 4).unwrap();
    assert_eq!(t.makespan_ticks(), 7);
    assert_eq!(t.idle_ticks(), 12);
    assert_eq!(u64::from(t.stages) * t.makespan_ticks(), 28);
}

#[test]
fn article_idle_shares_are_3_7_3_19_3_35() {
    for (m, den) in [(4, 7), (16, 19), (32, 35)] {
        let fwd = forward_only_timeline(4, m).unwrap();
        assert!(idle_is(&fwd, 3, den), "forward-only m={m}");
        for s in [Schedule::Gpipe, Schedule::OneFOneB] {
            let t = timeline(s, 4, m, 1).unwrap();
            assert!(idle_is(&t, 3, den), "{s:?} m={m}");
        }
        let closed = bubble(Schedule::OneFOneB, 4, m, 1).idle_fraction;
        assert!((closed - 3.0 / den as f64).abs() < 1e-15);
    }
}

#[test]
fn simulation_matches_closed_forms() {
    for p in 1..=8u32 {
        for m in 1..=24u32 {
            for s in [Schedule::Gpipe, Schedule::OneFOneB] {
                let t = timeline(s, p, m, 1).unwrap();
                assert!(
                    idle_is(&t, u64::from(p - 1), u64::from(m + p - 1)),
                    "{s:?} p={p} m={m}"
                );
                assert!(
                    overhead_is(&t, u64::from(p - 1), u64::from(m)),
                    "{s:?} p={p} m={m}"
                );
            }
            if m >= p {
                // Qi et al. 2023: ZB-H1 bubble (p−1)(T_F+T_B−T_W) = p−1 slots over 3m.
                let t = timeline(Schedule::ZeroBubble, p, m, 1).unwrap();
                assert!(
                    overhead_is(&t, u64::from(p - 1), u64::from(3 * m)),
                    "ZB p={p} m={m}"
                );
                assert!(
                    idle_is(&t, u64::from(p - 1), u64::from(3 * m + p - 1)),
                    "ZB p={p} m={m}"
                );
            }
            for v in 1..=4u32 {
                if m % p != 0 {
                    continue;
                }
                let t = timeline(Schedule::Interleaved, p, m, v).unwrap();
                assert!(
                    overhead_is(&t, u64::from(p - 1), u64::from(v * m)),
                    "int p={p} m={m} v={v}"
                );
                assert!(
                    idle_is(&t, u64::from(p - 1), u64::from(v * m + p - 1)),
                    "int p={p} m={m} v={v}"
                );
            }
        }
    }
}

#[test]
fn closed_form_bubble_equals_simulated_bubble() {
    for (s, p, m, v) in [
        (Schedule::Gpipe, 4, 8, 1),
        (Schedule::OneFOneB, 8, 32, 1),
        (Schedule::Interleaved, 4, 16, 2),
        (Schedule::Interleaved, 8, 16, 4),
        (Schedule::ZeroBubble, 4, 8, 1),
        (Schedule::ZeroBubble, 8, 4, 1),
    ] {
        let sim = timeline(s, p, m, v).unwrap().bubble();
        let closed = bubble(s, p, m, v);
        assert!(
            (sim.idle_fraction - closed.idle_fraction).abs() < 1e-12,
            "{s:?}"
        );
        assert!(
            (sim.overhead_vs_ideal - closed.overhead_vs_ideal).abs() < 1e-12,
            "{s:?}"
        );
    }
}

#[test]
fn zero_bubble_is_a_third_of_one_f_one_b() {
    for (p, m) in [(4, 8), (8, 32), (16, 64)] {
        let zb = bubble(Schedule::ZeroBubble, p, m, 1).overhead_vs_ideal;
        let ofob = bubble(Schedule::OneFOneB, p, m, 1).overhead_vs_ideal;
        assert!((zb * 3.0 - ofob).abs() < 1e-12);
    }
}

#[test]
fn in_flight_matches_simulated_peak() {
    for p in 1..=8u32 {
        for m in [1, 2, 3, 4, 8, 16] {
            for s in [Schedule::Gpipe, Schedule::OneFOneB, Schedule::ZeroBubble] {
                let t = timeline(s, p, m, 1).unwrap();
                for stage in 0..p {
                    assert_eq!(
                        t.peak_in_flight(stage),
                        in_flight_micro_batches(s, p, m, 1, stage),
                        "{s:?} p={p} m={m} stage={stage}"
                    );
                }
            }
            for v in 1..=4 {
                if m % p != 0 {
                    continue;
                }
                let t = timeline(Schedule::Interleaved, p, m, v).unwrap();
                for stage in 0..p {
                    assert_eq!(
                        t.peak_in_flight(stage),
                        in_flight_micro_batches(Schedule::Interleaved, p, m, v, stage),
                        "interleaved p={p} m={m} v={v} stage={stage}"
                    );
                }
            }
        }
    }
}

#[test]
fn korthikanti_interleaved_first_stage_factor() {
    // Korthikanti et al. 2022 §4.2.3: p · (1 + (p−1)/(p·v)) micro-batches on the first stage.
    let (p, m, v) = (8u32, 64u32, 4u32);
    let expected = 8.0 * (1.0 + 7.0 / 32.0);
    assert_eq!(
        in_flight_micro_batches(Schedule::Interleaved, p, m, v, 0),
        expected
    );
}

#[test]
fn refuses_bad_sizes_naming_the_field() {
    let err = timeline(Schedule::OneFOneB, 4, 513, 1).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::Invalid {
            field: "micro_batches",
            ..
        }
    ));
    let err = timeline(Schedule::OneFOneB, 0, 4, 1).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::Invalid {
            field: "stages",
            ..
        }
    ));
    let err = timeline(Schedule::Interleaved, 4, 6, 2).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::Invalid {
            field: "micro_batches",
            ..
        }
    ));
    let err = timeline(Schedule::Interleaved, 4, 8, 0).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::Invalid {
            field: "virtual_stages",
            ..
        }
    ));
}

fn schedule_strategy() -> impl Strategy<Value = (Schedule, u32, u32, u32)> {
    (0usize..4, 1u32..=8, 1u32..=12, 1u32..=4).prop_map(|(i, p, k, v)| {
        let s = Schedule::ALL[i];
        // Interleaved needs m divisible by p.
        let m = if s == Schedule::Interleaved {
            p * k.min(6)
        } else {
            k
        };
        (s, p, m, v)
    })
}

proptest! {
    #[test]
    fn bubble_falls_as_micro_batches_grow(i in 0usize..4, p in 2u32..64, m in 1u32..1000) {
        let s = Schedule::ALL[i];
        let a = bubble(s, p, m, 2);
        let b = bubble(s, p, m + 1, 2);
        prop_assert!(b.idle_fraction <= a.idle_fraction);
        prop_assert!(b.overhead_vs_ideal <= a.overhead_vs_ideal);
        prop_assert!(a.idle_fraction < 1.0 && a.idle_fraction >= 0.0);
    }

    #[test]
    fn timelines_are_well_formed((s, p, m, v) in schedule_strategy()) {
        let t = timeline(s, p, m, v).unwrap();
        let v = t.virtual_stages;
        // Every micro-batch's forward of every chunk on every stage, exactly once;
        // and exactly one backward (or one B and one W).
        let mut seen = HashSet::new();
        for op in &t.ops {
            prop_assert!(seen.insert((op.kind, op.stage, op.chunk, op.micro_batch)), "duplicate {:?}", op);
        }
        let backward_kinds: &[OpKind] = if s == Schedule::ZeroBubble {
            &[OpKind::BackwardInput, OpKind::BackwardWeight]
        } else {
            &[OpKind::Backward]
        };
        for stage in 0..p {
            for chunk in 0..v {
                for mb in 0..m {
                    prop_assert!(seen.contains(&(OpKind::Forward, stage, chunk, mb)));
                    for &k in backward_kinds {
                        prop_assert!(seen.contains(&(k, stage, chunk, mb)));
                    }
                }
            }
        }
        prop_assert_eq!(seen.len(), (p * v * m) as usize * (1 + backward_kinds.len()));

        // No two ops overlap on a stage.
        for stage in 0..p {
            let mut spans: Vec<(u64, u64)> = t.ops.iter().filter(|o| o.stage == stage)
                .map(|o| (o.start_tick, o.end_tick())).collect();
            spans.sort();
            for w in spans.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "overlap on stage {}", stage);
            }
        }

        // Dependencies hold.
        let end = |k: OpKind, st: u32, c: u32, mb: u32| t.ops.iter()
            .find(|o| o.kind == k && o.stage == st && o.chunk == c && o.micro_batch == mb)
            .map(|o| o.end_tick());
        for op in &t.ops {
            match op.kind {
                OpKind::Forward => {
                    let prev = if op.stage > 0 { end(OpKind::Forward, op.stage - 1, op.chunk, op.micro_batch) }
                        else if op.chunk > 0 { end(OpKind::Forward, p - 1, op.chunk - 1, op.micro_batch) }
                        else { Some(0) };
                    prop_assert!(prev.unwrap() <= op.start_tick);
                }
                OpKind::Backward | OpKind::BackwardInput => {
                    prop_assert!(end(OpKind::Forward, op.stage, op.chunk, op.micro_batch).unwrap() <= op.start_tick);
                    let last_fwd = end(OpKind::Forward, p - 1, v - 1, op.micro_batch).unwrap();
                    prop_assert!(last_fwd <= op.start_tick);
                    if op.stage + 1 < p {
                        prop_assert!(end(op.kind, op.stage + 1, op.chunk, op.micro_batch).unwrap() <= op.start_tick);
                    }
                }
                OpKind::BackwardWeight => {
                    prop_assert!(end(OpKind::BackwardInput, op.stage, op.chunk, op.micro_batch).unwrap() <= op.start_tick);
                }
            }
        }
    }
}

#[test]
fn large_timelines_run_and_oversized_ones_are_refused() {
    let t = timeline(Schedule::OneFOneB, 64, 512, 1).unwrap();
    assert!(idle_is(&t, 63, 575));
    let t = timeline(Schedule::Interleaved, 16, 512, 4).unwrap();
    assert!(overhead_is(&t, 15, 2048));
    let err = timeline(Schedule::Interleaved, 256, 512, 32).unwrap_err();
    assert!(matches!(
        err,
        PipelineError::Invalid {
            field: "micro_batches",
            ..
        }
    ));
}

#[test]
fn bubble_terms_are_labelled_apart() {
    let [idle, over] = planner_core::parallel::pipeline::bubble_terms(Schedule::OneFOneB, 4, 4, 1);
    assert_eq!(idle.value, 3.0 / 7.0);
    assert_eq!(over.value, 3.0 / 4.0);
    assert_ne!(idle.label, over.label);
    assert_eq!(idle.worked, "(4−1)/(4+4−1) = 42.9%");
}
