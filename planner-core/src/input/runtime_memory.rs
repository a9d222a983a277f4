//! Device memory a PyTorch training process holds besides its tensors: the CUDA
//! context, cuBLAS workspaces, NCCL communicator buffers and the caching allocator's
//! reserved-over-allocated gap, each derived from a published measurement or from the
//! library's documented defaults. These are the
//! defaults of [`crate::input::scenario::Overheads`]; the article's scenarios keep the
//! article's round runtime allowance ([`crate::input::scenario::Overheads::article`]).

/// One MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// `cudaMemGetInfo` used bytes after one 6.4 MB tensor with lazy module loading, the
/// PyTorch default since 1.13 / CUDA 11.7 (pytorch/pytorch PR #86509: 287,047,680 B;
/// 666,632,192 B with eager loading).
pub const MEASURED_CONTEXT_WITH_FIRST_TENSOR_BYTES: f64 = 287_047_680.0;

/// The caching allocator's segment for a request between 1 MiB and 10 MiB
/// (c10/cuda/CUDACachingAllocator.cpp, `kLargeBuffer` = 20 MiB): the 20·16·50·100·4 B
/// = 6.4 MB tensor of PR #86509 got one, so it is in that PR's used bytes.
pub const LARGE_BUFFER_SEGMENT_BYTES: f64 = 20.0 * MIB;

/// The CUDA context with lazy loading, without the caching allocator's first segment.
pub fn cuda_context_bytes() -> f64 {
    // pytorch/pytorch PR #86509: used bytes after the first tensor − its 20 MiB segment.
    MEASURED_CONTEXT_WITH_FIRST_TENSOR_BYTES - LARGE_BUFFER_SEGMENT_BYTES
}

/// Whether PyTorch gives this GPU the Hopper cuBLAS workspace (compute capability 9.0).
pub fn is_sm90(gpu_id: &str) -> bool {
    let id = gpu_id.to_ascii_lowercase();
    ["h100", "h200", "h800", "h20", "gh200"]
        .iter()
        .any(|k| id.starts_with(k))
}

/// One cuBLAS workspace as PyTorch sizes it without `CUBLAS_WORKSPACE_CONFIG`.
pub fn cublas_workspace_bytes_per_handle(sm90: bool) -> f64 {
    // aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize:
    // ":4096:2:16:8 default, 32MiB for Hopper" (4096 KiB × 8 on sm90, else 4096 KiB × 2 + 16 KiB × 8).
    if sm90 {
        4096.0 * 1024.0 * 8.0
    } else {
        4096.0 * 1024.0 * 2.0 + 16.0 * 1024.0 * 8.0
    }
}

/// cuBLAS handles with a workspace in a training process: PyTorch keeps one per
/// (handle, stream) and handles per thread; the forward runs on the Python thread and
/// the backward on the autograd engine's device thread (torch/csrc/autograd/engine.cpp),
/// both on the compute stream. cuBLASLt shares the cuBLAS workspace
/// (`TORCH_CUBLASLT_UNIFIED_WORKSPACE`, on unless set off, CublasHandlePool.cpp).
pub const CUBLAS_HANDLES_IN_TRAINING: f64 = 2.0;

/// cuBLAS workspaces of a training process (allocated through the caching allocator,
/// so inside `max_memory_allocated`).
pub fn cublas_workspace_bytes(sm90: bool) -> f64 {
    // CublasHandlePool.cpp: one workspace per (handle, stream); two handles (forward, backward).
    CUBLAS_HANDLES_IN_TRAINING * cublas_workspace_bytes_per_handle(sm90)
}

/// NCCL's Simple-protocol buffer per connection (NVIDIA/nccl src/init.cc,
/// `DEFAULT_BUFFSIZE` = 1 << 22; `NCCL_BUFFSIZE` in the NCCL docs, default 4 MiB).
pub const NCCL_SIMPLE_BUFFER_BYTES: f64 = 4_194_304.0;
/// NCCL's LL buffer: `NCCL_LL_LINES_PER_THREAD·NCCL_LL_MAX_NTHREADS·NCCL_STEPS·16 B`
/// = 8·512·8·16 (src/init.cc `DEFAULT_LL_BUFFSIZE`).
pub const NCCL_LL_BUFFER_BYTES: f64 = 524_288.0;
/// NCCL's LL128 buffer: `NCCL_LL128_ELEMS_PER_THREAD·NCCL_LL128_MAX_NTHREADS·NCCL_STEPS·8 B`
/// = 120·640·8·8 (src/init.cc `DEFAULT_LL128_BUFFSIZE`).
pub const NCCL_LL128_BUFFER_BYTES: f64 = 4_915_200.0;
/// cuMem allocation granularity NCCL's P2P buffers are rounded to (2 MiB).
pub const NCCL_CUMEM_GRANULARITY_BYTES: f64 = 2.0 * MIB;

/// One connection's buffers, all three protocols, rounded up to the cuMem granularity.
pub fn nccl_connection_bytes() -> f64 {
    // src/init.cc defaults: 4 MiB + 512 KiB + 4,800 KiB = 9,633,792 B → 10,485,760 B in 2 MiB
    // pages, the 10485760-byte allocations NCCL_DEBUG_SUBSYS=ALLOC shows (NVIDIA/nccl #1685).
    let raw = NCCL_SIMPLE_BUFFER_BYTES + NCCL_LL_BUFFER_BYTES + NCCL_LL128_BUFFER_BYTES;
    (raw / NCCL_CUMEM_GRANULARITY_BYTES).ceil() * NCCL_CUMEM_GRANULARITY_BYTES
}

/// Ring channels NCCL builds over 8-GPU NVLink H100 nodes ("Channel 00/16", the NCCL INFO
/// log of a 3-node, 24-GPU communicator in NVIDIA/nccl #1453); NCCL's memory is "linearly tied to the number of channels"
/// (sjeaugey, NVIDIA/nccl #864).
pub const NCCL_RING_CHANNELS: f64 = 16.0;

/// One communicator's buffers for ring collectives: each channel holds one connection's
/// buffers to its ring neighbour ("Ring uses a limited amount of memory as it only has 2
/// connections regardless of the scale", NVIDIA/nccl #864; one receives, one sends).
/// All-to-all and tree/NVLS connections add more (#1685: 1.06 GB → 4.34 GB after a
/// 32-channel all-to-all on 8 × H100).
pub fn nccl_ring_bytes_per_communicator(channels: f64) -> f64 {
    // channels × one connection's three protocol buffers (src/init.cc defaults).
    channels * nccl_connection_bytes()
}

/// A published pair of peaks from one named run: NeMo's `pretrain_qwen3_30b_a3b.py`
/// (Megatron-Core, Qwen3-30B-A3B, global batch 512), iterations 8–10 of its log in
/// NVIDIA-NeMo issue #14850: `max_memory_reserved: 57466159104 | max_memory_allocated:
/// 53930270720` (steady; iteration 11 reserved 57,675,874,304).
pub const MEASURED_PEAK_RESERVED_BYTES: f64 = 57_466_159_104.0;
/// The allocated peak of the same log line.
pub const MEASURED_PEAK_ALLOCATED_BYTES: f64 = 53_930_270_720.0;

/// The caching allocator's reserved-minus-allocated gap as a fraction of the allocated
/// peak, from the measured pair above. The gap is blocks the allocator caches that no
/// request fits: requests are rounded to 512 B, those under 1 MiB served from 2 MiB
/// segments, 1–10 MiB from 20 MiB segments, larger ones rounded to 2 MiB
/// (c10/cuda/CUDACachingAllocator.cpp `kMinBlockSize`, `kSmallBuffer`, `kLargeBuffer`,
/// `kRoundLarge`; PyTorch docs notes/cuda.html "Memory management"); it depends on the
/// order of allocations, so it is a measurement of one run, adjustable (`frag`);
/// `expandable_segments:True` maps 2 MiB pages into one growing segment and narrows it.
pub fn reserved_over_allocated_fraction() -> f64 {
    // NVIDIA-NeMo #14850: (57,466,159,104 − 53,930,270,720) / 53,930,270,720.
    (MEASURED_PEAK_RESERVED_BYTES - MEASURED_PEAK_ALLOCATED_BYTES) / MEASURED_PEAK_ALLOCATED_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_context_is_the_measurement_less_its_first_segment() {
        // 287,047,680 − 20 × 1,048,576 = 287,047,680 − 20,971,520 = 266,076,160 B.
        assert_eq!(cuda_context_bytes(), 266_076_160.0);
    }

    #[test]
    fn cublas_workspaces_follow_pytorch_defaults() {
        // Hopper: 4096 × 1024 × 8 = 33,554,432 B per handle; two handles: 67,108,864 B.
        assert_eq!(cublas_workspace_bytes_per_handle(true), 33_554_432.0);
        assert_eq!(cublas_workspace_bytes(true), 67_108_864.0);
        // Other GPUs: 4,194,304 × 2 + 16,384 × 8 = 8,388,608 + 131,072 = 8,519,680 B.
        assert_eq!(cublas_workspace_bytes_per_handle(false), 8_519_680.0);
        assert!(is_sm90("h100-sxm") && is_sm90("h200") && is_sm90("H100-96GB"));
        assert!(!is_sm90("a100-80gb") && !is_sm90("b200") && !is_sm90("mi300x"));
    }

    #[test]
    fn nccl_connection_matches_the_allocations_nccl_logs() {
        // 4,194,304 + 524,288 + 4,915,200 = 9,633,792 B; ceil(9,633,792 / 2,097,152) = 5
        // pages = 10,485,760 B: the size NVIDIA/nccl #1685's ALLOC log shows per channel.
        assert_eq!(
            NCCL_SIMPLE_BUFFER_BYTES + NCCL_LL_BUFFER_BYTES + NCCL_LL128_BUFFER_BYTES,
            9_633_792.0
        );
        assert_eq!(nccl_connection_bytes(), 10_485_760.0);
        // 16 ring channels: 16 × 10,485,760 = 167,772,160 B (160 MiB) per communicator.
        assert_eq!(
            nccl_ring_bytes_per_communicator(NCCL_RING_CHANNELS),
            167_772_160.0
        );
    }

    #[test]
    fn fragmentation_is_the_published_gap() {
        // 57,466,159,104 − 53,930,270,720 = 3,535,888,384 B; / 53,930,270,720 = 0.065564.
        let f = reserved_over_allocated_fraction();
        assert!((f - 0.065_564).abs() < 1e-6, "{f}");
        // Applied to the run's own allocated peak it gives back its reserved peak.
        assert_eq!(
            MEASURED_PEAK_ALLOCATED_BYTES * (1.0 + f),
            MEASURED_PEAK_RESERVED_BYTES
        );
    }

    #[test]
    fn published_all_to_all_growth_is_about_32_channels_of_peer_connections() {
        // NVIDIA/nccl #1685: 8 × H100, 1.06 GB → 4.34 GB after one all-to-all that connected
        // 32 channels to each of the 7 peers: 32 × 7 × 10,485,760 = 2,348,810,240 B, and each
        // peer connection holds a send and a receive side, so up to 4.70 GB; the measured growth
        // (3.28 GB) lies between one side and both.
        let growth = 4.34e9 - 1.06e9;
        let one_side = 32.0 * 7.0 * nccl_connection_bytes();
        assert!(
            growth > one_side && growth < 2.0 * one_side,
            "{growth} vs {one_side}"
        );
    }
}
