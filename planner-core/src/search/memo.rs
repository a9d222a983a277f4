//! The mesh search's memo of memory sub-results shared by many candidates: a layout's
//! stages ([`crate::memory::model_state::stage_spans_of`], which read only PP, the virtual stages and
//! the split), its activation sums ([`crate::memory::stage_peak::activation_sums`], which read only
//! the per-rank batch shape and switches of its [`ActivationSetup`]) and each stage's
//! model state ([`crate::memory::stage_peak::stage_state`], which reads the group sizes and the ZeRO
//! stage, not the micro-batch, recompute or schedule). Each is computed once per distinct
//! key and reused by every candidate that shares it; [`PeakMemo::peak_bytes`] equals
//! [`crate::memory::stage_peak::peak_memory_bytes`] bit for bit (`tests/search_memo.rs`).

use std::collections::HashMap;

use crate::input::layout::{Layout, Recompute, StageSplit};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::scenario::Scenario;
use crate::memory::activations::ActivationSetup;
use crate::memory::model_state::stage_spans_of;
use crate::memory::model_state::StageSpans;
use crate::memory::stage_peak::{activation_sums, peak_memory, peak_memory_from, stage_state};
use crate::memory::stage_peak::{ActivationSums, MemoryInputs, StageState};

/// What [`stage_spans_of`] reads of a layout: PP, virtual stages, the split.
type SpansKey = (u32, u32, StageSplit);

/// What [`ActivationSetup::new`] reads of a layout: micro-batch, TP, CP, sequence
/// parallel, expert-TP, EP, recompute (a hit is checked against the whole setup anyway).
type SumsKey = (u32, u32, u32, bool, u32, u32, Recompute);

/// What [`stage_state`] reads of a layout (dp, tp, pp, cp, ep, expert-TP, ZeRO stage) and
/// what its stages depend on (virtual stages, split).
type StateKey = ([u32; 6], u8, u32, StageSplit);

/// The stages of one [`StateKey`] and each one's [`StageState`] (the first
/// `spans.as_slice().len()` of the three).
type StateEntry = (StateKey, StageSpans, [StageState; 3]);

/// Memory sub-results of the candidates searched so far (grows with the distinct keys:
/// a few hundred entries for a 16,384-GPU search). One memo serves one model and scenario.
#[derive(Clone, Debug, Default)]
pub struct PeakMemo {
    /// Every (key, stages) seen: tens of entries, searched only when a state slot misses.
    spans: Vec<(SpansKey, StageSpans)>,
    /// Every sums seen, by key: a few hundred to a few thousand entries (DeepSeek-V3 on
    /// 2,048 GPUs: 1,370), looked up only when a recent slot misses (a scan of them was a
    /// fifth of that search's instructions).
    sums: HashMap<SumsKey, ActivationSums>,
    /// The sums last used per (recompute, micro-batch mod 8, expert-TP above 1), checked
    /// against the whole setup: the search alternates expert-TP 1 and TP innermost of
    /// each mesh, so each of the two has its own slots.
    recent_sums: [[Option<ActivationSums>; 2]; 3 * 8],
    /// The last [`StateEntry`] of each ZeRO stage: the search varies the micro-batch,
    /// recompute and ZeRO stage innermost, so each slot serves a run of candidates.
    states: [Option<StateEntry>; 4],
}

impl PeakMemo {
    /// An empty memo.
    pub fn new() -> Self {
        PeakMemo::default()
    }

    /// Peak training memory per GPU of `layout`, bytes: [`crate::memory::stage_peak::peak_memory_bytes`]
    /// of the scenario's precision, training, activation options and overheads.
    pub fn peak_bytes(
        &mut self,
        model: &ModelSpec,
        params: &ParamBreakdown,
        scenario: &Scenario,
        layout: &Layout,
    ) -> f64 {
        let inputs = MemoryInputs::of(scenario, model, params, layout);
        // An explicit list would be cloned into the key: computed each time (the search
        // proposes only the even split and the two Copy forms).
        if matches!(layout.stage_split, StageSplit::Chunks(_)) {
            return peak_memory(&inputs).0;
        }
        let setup = ActivationSetup::new(
            layout,
            &scenario.training,
            &scenario.activations,
            &scenario.precision,
            scenario.overheads.moe_routing,
            scenario.overheads.framework,
        );
        let sums_key = (
            layout.micro_batch,
            layout.tp,
            layout.cp,
            layout.sequence_parallel,
            layout.expert_tp,
            layout.ep,
            layout.recompute,
        );
        // First level: one slot per (recompute, micro-batch mod 8, expert-TP above 1), which
        // the search's innermost loops revisit; second level: every setup seen.
        let slot = (layout.recompute as usize) * 8 + (layout.micro_batch as usize) % 8;
        let sums = {
            let recent = self
                .recent_sums
                .get_mut(slot)
                .map(|pair| &mut pair[usize::from(layout.expert_tp > 1)]);
            match recent.as_deref().copied().flatten() {
                Some(hit) if hit.setup == setup => hit,
                _ => {
                    let entry = self
                        .sums
                        .entry(sums_key)
                        .or_insert_with(|| activation_sums(&inputs));
                    if entry.setup != setup {
                        *entry = activation_sums(&inputs);
                    }
                    if let Some(r) = recent {
                        *r = Some(*entry);
                    }
                    *entry
                }
            }
        };
        let l = layout;
        let key: StateKey = (
            [l.dp, l.tp, l.pp, l.cp, l.ep, l.expert_tp],
            l.zero.number(),
            l.virtual_stages,
            l.stage_split.clone(),
        );
        let slot = &mut self.states[usize::from(l.zero.number().min(3))];
        let entry = match slot {
            Some(entry) if entry.0 == key => entry,
            _ => {
                let spans_key = (l.pp, l.virtual_stages, l.stage_split.clone());
                let spans = match self.spans.iter().find(|(k, _)| *k == spans_key) {
                    Some((_, spans)) => spans.clone(),
                    None => {
                        let spans = stage_spans_of(params, layout);
                        self.spans.push((spans_key, spans.clone()));
                        spans
                    }
                };
                // At most three stages for every split but an explicit list (not memoized).
                let stages = spans.as_slice();
                let Some(first) = stages.first() else {
                    return peak_memory(&inputs).0;
                };
                let mut states = [stage_state(&inputs, first); 3];
                for (st, span) in states.iter_mut().zip(stages).skip(1) {
                    *st = stage_state(&inputs, span);
                }
                slot.insert((key, spans, states))
            }
        };
        let (_, spans, states) = entry;
        peak_memory_from(&inputs, spans, &sums, &states[..]).0
    }
}
