//! How an MoE layer's routed tokens reach their experts: dropless (Megatron-Core's default,
//! `moe_expert_capacity_factor = None`) or capped by a capacity factor, with or without padding
//! every expert to its capacity; and from that the load of the busiest expert-parallel rank,
//! which paces the layer: every rank waits for it at the combine all-to-all.
//!
//! Written by hand: the one formula is the expected maximum of the ranks' token counts, a
//! few lines of arithmetic no crate offers in this form.

use serde::{Deserialize, Serialize};

/// The scenario's routing choice. The default is dropless with no measured imbalance: the
/// busiest rank is priced at the sampling floor of random routing
/// ([`MoeRouting::busiest_rank_load`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeRouting {
    /// Megatron's `--moe-expert-capacity-factor`: an expert takes at most
    /// `capacity_factor × tokens·top-k / experts` of a source rank's tokens and drops the rest
    /// (megatron/core/transformer/moe/moe_utils.py `get_capacity`). `None`: dropless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_factor: Option<f64>,
    /// Megatron's `--moe-pad-expert-input-to-capacity`: every expert's input padded to its
    /// capacity, so every rank computes and receives exactly `capacity_factor ×` the mean.
    /// Needs a capacity factor (Megatron-Bridge `apply_moe_token_drop` raises without one).
    #[serde(default, skip_serializing_if = "is_false")]
    pub pad_to_capacity: bool,
    /// The busiest EP rank's routed tokens over the mean, as the user measured it on their
    /// router (Megatron logs per-expert token counts with `--moe-per-layer-logging`); replaces
    /// the sampling floor of dropless routing. At least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_busiest_load: Option<f64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl MoeRouting {
    /// Whether this is the default (dropless, no measurement), which files leave out.
    pub fn is_default(&self) -> bool {
        *self == MoeRouting::default()
    }

    /// The busiest of `ep` expert-parallel ranks' routed tokens over the mean per rank, when
    /// each rank receives `assignments_per_rank` (token, expert) pairs on average per micro-batch
    /// and MoE layer: the factor the expert GEMMs, the receiving side's copies, the all-to-all
    /// the busiest rank receives and its expert activations are priced at.
    /// - padded to capacity: exactly the capacity factor;
    /// - dropless: the measured figure, or else [`sampling_floor`];
    /// - capacity without padding: the dropless load, capped at the capacity factor.
    pub fn busiest_rank_load(&self, ep: u32, assignments_per_rank: f64) -> f64 {
        let dropless = match self.measured_busiest_load {
            Some(measured) => measured.max(1.0),
            None => sampling_floor(ep, assignments_per_rank),
        };
        match (self.capacity_factor, self.pad_to_capacity) {
            (Some(cf), true) => cf,
            (Some(cf), false) => dropless.min(cf),
            (None, _) => dropless,
        }
    }

    /// The id of the page's choice this routing is ([`CHOICES`]), its measured load aside;
    /// `None` for a capacity factor the list does not hold.
    pub fn choice_id(&self) -> Option<&'static str> {
        CHOICES
            .iter()
            .find(|c| c.capacity_factor == self.capacity_factor && c.pad == self.pad_to_capacity)
            .map(|c| c.id)
    }

    /// This routing with the choice `id`'s capacity factor and padding, the measured load kept.
    pub fn with_choice(self, id: &str) -> Option<MoeRouting> {
        let c = CHOICES.iter().find(|c| c.id == id)?;
        Some(MoeRouting {
            capacity_factor: c.capacity_factor,
            pad_to_capacity: c.pad,
            ..self
        })
    }

    /// One line for a term's assumption.
    pub fn describe(&self) -> String {
        let measured = |m: f64| format!("busiest EP rank measured at {m:.2}× the mean");
        match (self.capacity_factor, self.pad_to_capacity, self.measured_busiest_load) {
            (Some(cf), true, _) => format!("capacity factor {cf} with every expert padded to it"),
            (Some(cf), false, Some(m)) => format!("capacity factor {cf} (drops), {}", measured(m)),
            (Some(cf), false, None) => {
                format!("capacity factor {cf} (drops), else random routing's busiest rank")
            }
            (None, _, Some(m)) => format!("dropless, {}", measured(m)),
            (None, _, None) => "dropless, balanced in expectation: the busiest EP rank at random routing's expected maximum".into(),
        }
    }
}

/// One routing the page offers: dropless, and capacity factors of published recipes (Switch
/// Transformer §2.2 trains at 1.0–2.0; Megatron-Bridge's token drop runs 1.0 padded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoutingChoice {
    /// The option's value.
    pub id: &'static str,
    /// What a person reads.
    pub label: &'static str,
    /// [`MoeRouting::capacity_factor`].
    pub capacity_factor: Option<f64>,
    /// [`MoeRouting::pad_to_capacity`].
    pub pad: bool,
}

/// The page's routing choices, in its order.
pub const CHOICES: [RoutingChoice; 5] = [
    RoutingChoice {
        id: "dropless",
        label: "Dropless (Megatron's default)",
        capacity_factor: None,
        pad: false,
    },
    RoutingChoice {
        id: "cf1-pad",
        label: "Capacity 1.0, padded",
        capacity_factor: Some(1.0),
        pad: true,
    },
    RoutingChoice {
        id: "cf1.25",
        label: "Capacity 1.25, drops overflow",
        capacity_factor: Some(1.25),
        pad: false,
    },
    RoutingChoice {
        id: "cf1.25-pad",
        label: "Capacity 1.25, padded",
        capacity_factor: Some(1.25),
        pad: true,
    },
    RoutingChoice {
        id: "cf2",
        label: "Capacity 2.0, drops overflow",
        capacity_factor: Some(2.0),
        pad: false,
    },
];

/// The busiest rank's load over the mean when routing is balanced in expectation but each
/// (token, expert) pair lands on a rank at random: a rank's count is Binomial(`ep·n`, `1/ep`)
/// with mean `n` and standard deviation `√(n·(1 − 1/ep))`, and the expected maximum of `ep`
/// such counts lies at most `√(2·ln ep)` standard deviations above the mean (the Gaussian
/// maximal inequality, Boucheron, Lugosi & Massart, *Concentration Inequalities*, 2013, §2.5).
/// A floor for a trained router, whose tokens of one sequence route alike: 1 + √(2·ln ep) ·
/// √((1 − 1/ep)/n). 1 without expert parallelism (one rank holds every expert).
pub fn sampling_floor(ep: u32, assignments_per_rank: f64) -> f64 {
    if ep <= 1 || assignments_per_rank <= 0.0 {
        return 1.0;
    }
    let ep = f64::from(ep);
    1.0 + (2.0 * ep.ln()).sqrt() * ((1.0 - 1.0 / ep) / assignments_per_rank).sqrt()
}

/// Tokens one rank routes per micro-batch and MoE layer: `b·s/cp`, split by TP under
/// sequence parallelism (Megatron's MoE layer routes the SP shard's tokens).
pub fn routed_tokens_per_rank(
    micro_batch: f64,
    seq_len: f64,
    cp: u32,
    tp: u32,
    sequence_parallel: bool,
) -> f64 {
    let split = if sequence_parallel {
        f64::from(tp.max(1))
    } else {
        1.0
    };
    micro_batch.max(1.0) * seq_len / f64::from(cp.max(1)) / split
}

/// (token, expert) pairs one EP rank receives on average per micro-batch and MoE layer: each
/// of the EP group's ranks sends its `tokens_per_rank` tokens top-k times over the experts, and
/// the dispatcher gathers them over expert-TP (megatron/core/transformer/moe/token_dispatcher.py),
/// so a rank's experts see `expert_tp × tokens_per_rank × top-k` of them.
pub fn assignments_per_rank(tokens_per_rank: f64, expert_tp: u32, top_k: f64) -> f64 {
    f64::from(expert_tp.max(1)) * tokens_per_rank * top_k
}
