//! Device memory bandwidth from a large device-to-device copy.

use planner_core::edges::report::{algbw_gb_per_s, MemoryBandwidthResult};

use crate::gpu::{DeviceBuffer, Gpu, GpuError, Timer};

/// Bytes a copy of `buffer_bytes` moves: each byte is read once and written once.
pub fn copy_traffic_bytes(buffer_bytes: u64) -> u64 {
    2 * buffer_bytes
}

/// Times `cuMemcpyDtoDAsync` of `buffer_bytes` between two buffers.
pub fn bench_copy(
    gpu: &Gpu,
    buffer_bytes: u64,
    warmup: u32,
    iters: u32,
) -> Result<MemoryBandwidthResult, GpuError> {
    let src = DeviceBuffer::alloc(gpu, buffer_bytes)?;
    let dst = DeviceBuffer::alloc(gpu, buffer_bytes)?;
    src.fill_pattern(gpu, planner_core::edges::report::Dtype::Fp32, 0)?;
    let copy = || -> Result<(), GpuError> {
        gpu.ctx.bind_to_thread()?;
        // SAFETY: both buffers hold buffer_bytes.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst.ptr(),
                src.ptr(),
                buffer_bytes as usize,
                gpu.stream.cu_stream(),
            )
        }?;
        Ok(())
    };
    for _ in 0..warmup {
        copy()?;
    }
    let timer = Timer::new(gpu)?;
    timer.start(&gpu.stream)?;
    let iters = iters.max(1);
    for _ in 0..iters {
        copy()?;
    }
    timer.stop(&gpu.stream)?;
    let time_us = timer.elapsed_us()? / f64::from(iters);
    let bytes = copy_traffic_bytes(buffer_bytes);
    Ok(MemoryBandwidthResult {
        label: format!("d2d copy {} MiB (GPU {})", buffer_bytes >> 20, gpu.ordinal),
        bytes,
        time_us,
        gb_per_s: algbw_gb_per_s(bytes, time_us),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_copy_counts_read_and_write() {
        // 1 GiB copied in 500 us is 2 GiB of traffic: 4295 GB/s.
        let bytes = super::copy_traffic_bytes(1 << 30);
        let bw = planner_core::edges::report::algbw_gb_per_s(bytes, 500.0);
        assert!((bw - 4294.967296).abs() < 1e-6);
    }
}
