//! Expert parallelism: token routing with capacity, and the all-to-all it costs.

use super::*;

// ---------------------------------------------------------------------------
// Expert parallelism: routing with capacity
// ---------------------------------------------------------------------------

/// Where one token went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedToken {
    /// Token index.
    pub token: u32,
    /// Rank the token starts on.
    pub rank: u32,
    /// Experts chosen (top-k), in choice order.
    pub experts: Vec<u32>,
    /// For each chosen expert: dropped because the expert was already full.
    pub dropped: Vec<bool>,
}

/// One expert's load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpertLoad {
    /// Expert index.
    pub expert: u32,
    /// Rank that holds it.
    pub rank: u32,
    /// Assignments routed to it.
    pub routed: u32,
    /// Assignments it processes: `min(routed, capacity)`.
    pub kept: u32,
    /// Assignments over capacity: `max(0, routed − capacity)`.
    pub dropped: u32,
    /// Empty slots filled with padding: `max(0, capacity − routed)`.
    pub padded: u32,
}

/// All-to-all traffic of one rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTraffic {
    /// Rank.
    pub rank: u32,
    /// Assignments this rank sends to experts on other ranks (dispatch).
    pub tokens_sent: u32,
    /// Assignments this rank receives from other ranks.
    pub tokens_received: u32,
    /// Dispatch bytes sent: `tokens_sent × hidden × bytes`; combine sends the same back.
    pub dispatch_bytes_sent: f64,
}

/// The routing figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpRouting {
    /// Expert-parallel ranks.
    pub ep: u32,
    /// Experts.
    pub experts: u32,
    /// Experts per token.
    pub top_k: u32,
    /// Tokens routed.
    pub tokens: u32,
    /// Capacity factor.
    pub capacity_factor: f64,
    /// Slots per expert: `ceil(capacity_factor · tokens · k / experts)`.
    pub capacity: u32,
    /// The model has no experts; the article's 4 experts, top-1, are used.
    pub illustrative: bool,
    /// Each token's route.
    pub routes: Vec<RoutedToken>,
    /// Each expert's load.
    pub loads: Vec<ExpertLoad>,
    /// Assignments dropped in all: `Σ max(0, load − capacity)`.
    pub dropped: u32,
    /// Padding slots in all.
    pub padded: u32,
    /// Each rank's all-to-all.
    pub ranks: Vec<RankTraffic>,
    /// Bytes of one token's hidden state: `hidden × bytes per value`.
    pub bytes_per_token: f64,
}

/// Xorshift64 (Marsaglia 2003): a tiny deterministic generator for the routing figure.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        // A zero state stays zero; mix the seed so 0 is usable.
        XorShift(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n.max(1))) as u32
    }
}

/// Routes `tokens` tokens, spread evenly over `ep` ranks, to the model's
/// experts (top-k, pseudo-random from `seed`), with expert capacity
/// `ceil(capacity_factor · tokens·k / experts)`; assignments beyond capacity are
/// dropped in token order (Megatron's drop policy), free slots padded.
pub fn ep_routing(
    model: &ModelSpec,
    ep: u32,
    capacity_factor: f64,
    tokens: u32,
    seed: u64,
    bytes_per_value: f64,
) -> Result<EpRouting, FieldError> {
    let (experts, top_k, illustrative) = match &model.moe {
        Some(m) if m.routed_experts > 0 => (m.routed_experts, m.experts_per_token.max(1), false),
        _ => (4, 1, true),
    };
    if experts > MAX_DRAWN_EXPERTS {
        return Err(field_error(
            "model.moe.routed_experts",
            format!("at most {MAX_DRAWN_EXPERTS} experts can be drawn, got {experts}"),
        ));
    }
    if top_k > MAX_DRAWN_TOP_K {
        return Err(field_error(
            "model.moe.experts_per_token",
            format!("at most {MAX_DRAWN_TOP_K} experts per token can be drawn, got {top_k}"),
        ));
    }
    if top_k > experts {
        return Err(field_error(
            "model.moe.experts_per_token",
            format!("top-k {top_k} exceeds {experts} experts"),
        ));
    }
    if ep == 0 || !experts.is_multiple_of(ep) {
        return Err(field_error(
            "ep",
            format!("must divide the {experts} experts, got {ep}"),
        ));
    }
    if tokens == 0 || tokens > MAX_ROUTED_TOKENS || !tokens.is_multiple_of(ep) {
        return Err(field_error(
            "tokens",
            format!("must be a multiple of ep = {ep} from 1 to {MAX_ROUTED_TOKENS}, got {tokens}"),
        ));
    }
    if !(capacity_factor.is_finite() && capacity_factor > 0.0) {
        return Err(field_error(
            "capacity_factor",
            format!("must be positive, got {capacity_factor}"),
        ));
    }
    let per_rank_tokens = tokens / ep;
    let experts_per_rank = experts / ep;
    let expert_rank = |e: u32| e / experts_per_rank;
    // Lepikhin et al. 2020 (GShard) §2.2: capacity = capacity_factor · tokens·k / experts.
    let capacity = (capacity_factor * f64::from(tokens) * f64::from(top_k) / f64::from(experts))
        .ceil()
        .min(f64::from(u32::MAX)) as u32;
    let mut rng = XorShift::new(seed);
    let mut routed = vec![0u32; experts as usize];
    let mut sent = vec![0u32; ep as usize];
    let mut received = vec![0u32; ep as usize];
    let mut routes = Vec::with_capacity(tokens as usize);
    for token in 0..tokens {
        let rank = token / per_rank_tokens;
        let mut chosen: Vec<u32> = Vec::with_capacity(top_k as usize);
        let mut dropped = Vec::with_capacity(top_k as usize);
        while chosen.len() < top_k as usize {
            let e = rng.below(experts);
            if chosen.contains(&e) {
                continue;
            }
            chosen.push(e);
            let load = &mut routed[e as usize];
            dropped.push(*load >= capacity);
            *load += 1;
            let dest = expert_rank(e);
            if dest != rank {
                sent[rank as usize] += 1;
                received[dest as usize] += 1;
            }
        }
        routes.push(RoutedToken {
            token,
            rank,
            experts: chosen,
            dropped,
        });
    }
    let loads: Vec<ExpertLoad> = routed
        .iter()
        .enumerate()
        .map(|(e, &r)| ExpertLoad {
            expert: e as u32,
            rank: expert_rank(e as u32),
            routed: r,
            kept: r.min(capacity),
            dropped: r.saturating_sub(capacity),
            padded: capacity.saturating_sub(r),
        })
        .collect();
    let bytes_per_token = f64::from(model.hidden) * bytes_per_value;
    Ok(EpRouting {
        ep,
        experts,
        top_k,
        tokens,
        capacity_factor,
        capacity,
        illustrative,
        dropped: loads.iter().map(|l| l.dropped).sum(),
        padded: loads.iter().map(|l| l.padded).sum(),
        loads,
        routes,
        ranks: (0..ep)
            .map(|r| RankTraffic {
                rank: r,
                tokens_sent: sent[r as usize],
                tokens_received: received[r as usize],
                dispatch_bytes_sent: f64::from(sent[r as usize]) * bytes_per_token,
            })
            .collect(),
        bytes_per_token,
    })
}
