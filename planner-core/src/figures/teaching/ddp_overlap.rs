//! DDP: bucketed all-reduce overlapping the backward pass, as a timeline.

use super::*;

// ---------------------------------------------------------------------------
// DDP: bucketed all-reduce overlapping backward
// ---------------------------------------------------------------------------

/// A drawn block of layers in the DDP timeline: its backward and its gradients' all-reduce.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpBlock {
    /// Layers of the block, `[first, last]` in forward numbering (backward runs last to first).
    pub layers: [u32; 2],
    /// Backward of the block starts, seconds from the start of backward.
    pub backward_start_s: f64,
    /// Backward of the block ends.
    pub backward_end_s: f64,
    /// First all-reduce of the block's gradient buckets starts.
    pub all_reduce_start_s: f64,
    /// Last all-reduce of the block's buckets ends.
    pub all_reduce_end_s: f64,
    /// Gradient bytes of the block on this rank.
    pub grad_bytes: f64,
    /// Buckets of the block.
    pub buckets: f64,
}

/// One rank's DDP backward on one link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpTimeline {
    /// The slowest link the gradient group crosses in this timeline.
    pub link: LinkDomain,
    /// How the group is placed (two-level when it has several GPUs on each of several nodes).
    pub domain: Domain,
    /// Bus bandwidth of `link`, bytes/s.
    pub busbw_bytes_per_s: f64,
    /// Latency per step, seconds.
    pub latency_s: f64,
    /// Blocks, in backward order (last layers first).
    pub blocks: Vec<DdpBlock>,
    /// Backward ends (the optimizer step could start).
    pub backward_end_s: f64,
    /// Last all-reduce ends (the optimizer step starts).
    pub all_reduce_end_s: f64,
    /// Time the GPU waits after backward: `all_reduce_end − backward_end`.
    pub exposed_wait_s: f64,
    /// All-reduce time if nothing overlapped.
    pub all_reduce_total_s: f64,
}

/// The DDP step figure: the same backward on a fast and a slow link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpOverlapDemo {
    /// Ranks in the gradient all-reduce (`dp × cp`, or 4 when the layout has none).
    pub ranks: u64,
    /// The rank count is the article's 4, not the layout's.
    pub ranks_assumed: bool,
    /// Gradient bytes per rank per step (`dense/(tp·pp) × grad bytes`).
    pub grad_bytes: f64,
    /// Bucket size, bytes.
    pub bucket_bytes: f64,
    /// Layers of this rank's stage.
    pub layers: u32,
    /// Where the layout's gradient group actually runs.
    pub current_domain: Domain,
    /// On NVLink/intra-node bandwidth.
    pub fast: DdpTimeline,
    /// On network bandwidth.
    pub slow: DdpTimeline,
    /// On the layout's own placement of the group (two-level when it spans nodes with
    /// several GPUs per node; the article's 4 ranks on NVLink when the layout has no DP).
    pub current: DdpTimeline,
    /// Assumptions, one line.
    pub assumption: String,
}

/// Simulates one backward: bucket `i` is full when backward has produced
/// `(i+1)·bucket` bytes (gradients appear at a steady rate), and each bucket's
/// all-reduce starts when it is full and the previous one has finished
/// (PyTorch DDP reduces buckets in order on one stream; Li et al. 2020 §3.2.3).
fn simulate_ddp(
    comm: &CommModel,
    g: &GroupPlacement,
    link: LinkDomain,
    grad_bytes: f64,
    bucket_bytes: f64,
    layers: u32,
    backward_s: f64,
) -> DdpTimeline {
    let ab = comm.link(Collective::AllReduce, link);
    let buckets = (grad_bytes / bucket_bytes.max(1.0))
        .ceil()
        .clamp(1.0, MAX_SIMULATED_BUCKETS);
    let per_bucket = grad_bytes / buckets;
    let t_bucket = comm.time_s(Collective::AllReduce, per_bucket, g);
    let blocks_n = DDP_DRAWN_BLOCKS.min(layers.max(1));
    let mut blocks = Vec::with_capacity(blocks_n as usize);
    let mut link_free = 0.0f64;
    let mut done = 0.0f64; // buckets simulated so far
    for b in 0..blocks_n {
        // Block b covers backward fraction [b/B, (b+1)/B): the last layers first.
        let lo_frac = f64::from(b) / f64::from(blocks_n);
        let hi_frac = f64::from(b + 1) / f64::from(blocks_n);
        let last_bucket = (hi_frac * buckets).round();
        let first_layer = layers - (f64::from(layers) * hi_frac).round() as u32 + 1;
        let last_layer = layers - (f64::from(layers) * lo_frac).round() as u32;
        let mut ar_start = f64::NAN;
        let n_in_block = last_bucket - done;
        while done < last_bucket {
            let ready = (done + 1.0) / buckets * backward_s;
            let start = ready.max(link_free);
            if ar_start.is_nan() {
                ar_start = start;
            }
            link_free = start + t_bucket;
            done += 1.0;
        }
        blocks.push(DdpBlock {
            layers: [first_layer.min(last_layer), last_layer],
            backward_start_s: lo_frac * backward_s,
            backward_end_s: hi_frac * backward_s,
            all_reduce_start_s: if ar_start.is_nan() {
                link_free
            } else {
                ar_start
            },
            all_reduce_end_s: link_free,
            grad_bytes: n_in_block * per_bucket,
            buckets: n_in_block,
        });
    }
    DdpTimeline {
        link,
        domain: g.domain,
        busbw_bytes_per_s: ab.busbw_bytes_per_s,
        latency_s: ab.latency_s,
        blocks,
        backward_end_s: backward_s,
        all_reduce_end_s: link_free.max(backward_s),
        exposed_wait_s: (link_free - backward_s).max(0.0),
        all_reduce_total_s: t_bucket * buckets,
    }
}

/// One rank's DDP backward (the last micro-batch, when gradients are reduced)
/// with this model's gradient buckets all-reduced on a fast (intra-node) and a
/// slow (network) link.
pub fn ddp_overlap_demo(
    scenario: &Scenario,
    model: &ModelSpec,
    options: &CostOptions,
) -> DdpOverlapDemo {
    let share = layer_share(scenario, model, options);
    let (ranks, ranks_assumed) = demo_group(&share.group);
    let inp = &share.step.comm_inputs;
    let grad_bytes = share.params_per_layer * share.layers_per_stage * inp.grad_bytes;
    let backward_s = share.backward_per_layer_s * share.layers_per_stage;
    let layers = share.layers_per_stage as u32;
    let current = if ranks_assumed {
        on_one_link(ranks, LinkDomain::IntraNode)
    } else {
        share.group
    };
    let current_link = if current.crosses_nodes() {
        LinkDomain::InterNode
    } else {
        LinkDomain::IntraNode
    };
    let run = |link| {
        simulate_ddp(
            &share.step.comm,
            &on_one_link(ranks, link),
            link,
            grad_bytes,
            inp.bucket_bytes,
            layers,
            backward_s,
        )
    };
    DdpOverlapDemo {
        ranks,
        ranks_assumed,
        grad_bytes,
        bucket_bytes: inp.bucket_bytes,
        layers,
        current_domain: share.group.domain,
        fast: run(LinkDomain::IntraNode),
        slow: run(LinkDomain::InterNode),
        current: simulate_ddp(
            &share.step.comm,
            &current,
            current_link,
            grad_bytes,
            inp.bucket_bytes,
            layers,
            backward_s,
        ),
        assumption: format!(
            "{} B gradients per parameter spread evenly over {layers} layers; buckets of {:.0} MB reduced in order as backward fills them; ring all-reduce α–β on one link",
            inp.grad_bytes,
            inp.bucket_bytes / 1e6
        ),
    }
}
