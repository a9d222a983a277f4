//! DeepSpeed ZeRO's own memory semantics (`Framework::DeepSpeed`): the contiguous
//! gradient (IPG) buffers sized by `reduce_bucket_size`, ZeRO-3's prefetch bucket and
//! live-parameter cap, the fp32 gradient partition its optimizer step makes, and
//! DeepSpeed's published model-state estimator (`estimate_zero{2,3}_model_states_mem_needs`),
//! each from DeepSpeed's source and config defaults (deepspeed/runtime/zero/config.py).

use crate::input::layout::ZeroStage;

/// `reduce_bucket_size` default, elements (deepspeed/runtime/zero/config.py: `pp_int(5e8)`).
pub const REDUCE_BUCKET_SIZE_ELEMENTS: f64 = 5e8;
/// `allgather_bucket_size` default, elements (config.py: `pp_int(5e8)`).
pub const ALLGATHER_BUCKET_SIZE_ELEMENTS: f64 = 5e8;
/// `stage3_prefetch_bucket_size` default, elements (config.py: `pp_int(5e7)`).
pub const STAGE3_PREFETCH_BUCKET_SIZE_ELEMENTS: f64 = 5e7;
/// `stage3_max_live_parameters` default, elements (config.py: `pp_int(1e9)`).
pub const STAGE3_MAX_LIVE_PARAMETERS: f64 = 1e9;
/// `stage3_param_persistence_threshold` default, elements (config.py: `pp_int(1e5)`):
/// parameters smaller than this stay whole on every rank (norms, biases: negligible bytes).
pub const STAGE3_PARAM_PERSISTENCE_THRESHOLD: f64 = 1e5;

/// `overlap_comm` when the config leaves it unset: config.py's `overlap_comm_valid`
/// validator turns it on for stage 3 only.
pub fn overlap_comm_default(zero: ZeroStage) -> bool {
    zero == ZeroStage::Zero3
}

/// The contiguous-gradient (IPG) buffers of a backward, bytes. `contiguous_gradients`
/// defaults to true (config.py); stage_1_and_2.py `backward()` allocates
/// `torch.empty(reduce_bucket_size)` in the gradient dtype, a second one when
/// `overlap_comm` ("double buffers to avoid data access conflict"); stage3.py keeps one
/// `__ipg_bucket_flat_buffer` of `reduce_bucket_size`. ZeRO stage 0 is plain DDP.
pub fn ipg_buffer_bytes(zero: ZeroStage, grad_bytes: f64) -> f64 {
    match zero {
        ZeroStage::Ddp => 0.0,
        ZeroStage::Zero1 | ZeroStage::Zero2 => {
            // stage_1_and_2.py backward(): buf_0 (+ buf_1 with overlap_comm), reduce_bucket_size each.
            let buffers = if overlap_comm_default(zero) { 2.0 } else { 1.0 };
            buffers * REDUCE_BUCKET_SIZE_ELEMENTS * grad_bytes
        }
        // stage3.py: one flat IPG bucket of reduce_bucket_size elements.
        ZeroStage::Zero3 => REDUCE_BUCKET_SIZE_ELEMENTS * grad_bytes,
    }
}

/// ZeRO-3 parameters gathered at once, elements: the module computing plus what the
/// prefetcher fetches ahead (`stage3_prefetch_bucket_size`), never more than
/// `stage3_max_live_parameters` (partitioned_param_coordinator.py fetches ahead up to the
/// prefetch bucket and releases past the live cap).
pub fn zero3_gathered_elements(largest_unit_params: f64) -> f64 {
    // config.py defaults: largest unit + 5e7 prefetched, capped at 1e9 live.
    (largest_unit_params + STAGE3_PREFETCH_BUCKET_SIZE_ELEMENTS).min(STAGE3_MAX_LIVE_PARAMETERS)
}

/// The optimizer step's fp32 gradient partition, bytes: stage_1_and_2.py `step()` flattens
/// this rank's 16-bit gradient partition and converts it `.to(fp32)` into
/// `single_partition_of_fp32_groups[i].grad` (docs/code-docs/source/memory.rst: "all of
/// them are converted into fp32 before doing the weight updates ... we would need the 4
/// bytes per gradient"). Held with the model state while activations are freed.
pub fn fp32_grad_partition_bytes(partition_params: f64) -> f64 {
    // 4 B per parameter of this rank's partition (memory.rst, "Note about gradients").
    4.0 * partition_params
}

/// DeepSpeed's published ZeRO-2 GPU estimate without offload, bytes
/// (stage_1_and_2.py `estimate_zero2_model_states_mem_needs`, memory.rst):
/// `4·params + 16·params / total_gpus`.
pub fn estimate_zero2_gpu_bytes(total_params: f64, total_gpus: f64) -> f64 {
    // memory.rst: "offload_optimizer none: 4 * params + 16 * params / (total number of gpus)".
    4.0 * total_params + (16.0 * total_params / total_gpus).trunc()
}

/// DeepSpeed's published ZeRO-3 GPU estimate without offload, bytes
/// (stage3.py `estimate_zero3_model_states_mem_needs`, memory.rst case 1):
/// `4·largest_layer_params + 18·params / total_gpus`.
pub fn estimate_zero3_gpu_bytes(
    total_params: f64,
    largest_layer_params: f64,
    total_gpus: f64,
) -> f64 {
    // memory.rst case 1: largest_layer_memory + int(18 * total_params / total_gpus).
    4.0 * largest_layer_params + (18.0 * total_params / total_gpus).trunc()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    #[test]
    fn estimators_print_the_published_t5_3b_figures() {
        // docs/code-docs/source/memory.rst, estimate_*_mem_needs_all_cold for t5-3b:
        // 2851M params, 32M largest layer, 1 node × 8 GPUs; DeepSpeed prints bytes / 2^30
        // with two decimals as "GB". ZeRO-2, no offload: "15.93GB":
        // 4 × 2851e6 + 16 × 2851e6 / 8 = 11,404e6 + 5,702e6 = 17,106e6 B = 15.93 GiB.
        let z2 = estimate_zero2_gpu_bytes(2851e6, 8.0) / GIB;
        assert_eq!(format!("{z2:.2}"), "15.93");
        // ZeRO-3, no offload: "6.09GB": 4 × 32e6 + 18 × 2851e6 / 8 = 128e6 + 6,414.75e6 B.
        let z3 = estimate_zero3_gpu_bytes(2851e6, 32e6, 8.0) / GIB;
        assert_eq!(format!("{z3:.2}"), "6.09");
    }

    #[test]
    fn buffers_follow_the_config_defaults() {
        // ZeRO-1/2: one IPG buffer (overlap_comm off): 5e8 × 2 B = 1e9 B.
        assert_eq!(ipg_buffer_bytes(ZeroStage::Zero2, 2.0), 1e9);
        assert_eq!(ipg_buffer_bytes(ZeroStage::Zero1, 2.0), 1e9);
        // ZeRO-3: one flat bucket, 1e9 B; stage 0 has none.
        assert_eq!(ipg_buffer_bytes(ZeroStage::Zero3, 2.0), 1e9);
        assert_eq!(ipg_buffer_bytes(ZeroStage::Ddp, 2.0), 0.0);
        assert!(overlap_comm_default(ZeroStage::Zero3));
        assert!(!overlap_comm_default(ZeroStage::Zero2));
        // A 70B layer unit (855M): 855e6 + 5e7 = 905e6 elements gathered; a 1.5B unit hits the
        // 1e9 live cap.
        assert_eq!(zero3_gathered_elements(855e6), 905e6);
        assert_eq!(zero3_gathered_elements(1.5e9), 1e9);
        // 70e9 / 64 partition: 4 × 1.09375e9 = 4.375e9 B of fp32 gradients at the step.
        assert_eq!(fp32_grad_partition_bytes(70e9 / 64.0), 4.375e9);
    }
}
