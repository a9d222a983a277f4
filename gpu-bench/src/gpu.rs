//! Devices, raw device buffers, event timing and NCCL communicators, on
//! cudarc's driver and NCCL bindings. Buffers are raw `cuMemAlloc`
//! allocations so a size that does not fit is reported as out of memory and
//! skipped instead of aborting the run.

use std::ffi::CStr;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{result as dr, sys as ds, CudaContext, CudaEvent, CudaStream, DriverError};
use cudarc::nccl::{result as nr, sys as ns};
use planner_core::edges::report::{CollectiveOp, Dtype};

/// What went wrong on the device.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuError {
    /// An allocation of this many bytes did not fit.
    OutOfMemory {
        /// Bytes requested.
        bytes: u64,
    },
    /// A CUDA driver call failed.
    Driver(String),
    /// An NCCL call failed.
    Nccl(String),
    /// A cuBLASLt call failed.
    Blas(String),
    /// The device or library cannot do this (e.g. FP8 before compute capability 8.9).
    Unsupported(String),
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::OutOfMemory { bytes } => write!(f, "out of memory allocating {bytes} bytes"),
            GpuError::Driver(m) => write!(f, "CUDA driver: {m}"),
            GpuError::Nccl(m) => write!(f, "NCCL: {m}"),
            GpuError::Blas(m) => write!(f, "cuBLASLt: {m}"),
            GpuError::Unsupported(m) => write!(f, "unsupported: {m}"),
        }
    }
}

impl std::error::Error for GpuError {}

impl From<DriverError> for GpuError {
    fn from(e: DriverError) -> Self {
        if e.0 == ds::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            GpuError::OutOfMemory { bytes: 0 }
        } else {
            GpuError::Driver(format!("{e:?}"))
        }
    }
}

impl From<nr::NcclError> for GpuError {
    fn from(e: nr::NcclError) -> Self {
        // SAFETY: ncclGetErrorString returns a static C string for any result code.
        let text = unsafe {
            let p = ns::ncclGetErrorString(e.0);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        GpuError::Nccl(format!("{:?}: {text}", e.0))
    }
}

/// One GPU: its context, a compute stream and a communication stream.
pub struct Gpu {
    /// Device ordinal on this node.
    pub ordinal: usize,
    /// Primary context.
    pub ctx: Arc<CudaContext>,
    /// Stream for compute (and for everything when not overlapping).
    pub stream: Arc<CudaStream>,
    /// Second stream, for communication overlapped with compute.
    pub comm_stream: Arc<CudaStream>,
}

impl Gpu {
    /// Opens device `ordinal`. Call [`crate::libs::check`] first: a missing driver panics inside cudarc.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        let count = CudaContext::device_count()?;
        if ordinal >= count.max(0) as usize {
            return Err(GpuError::Driver(format!(
                "GPU {ordinal} requested but the driver sees {count} GPU(s) (check CUDA_VISIBLE_DEVICES)"
            )));
        }
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: gpu-bench orders all work itself with explicit events and
        // synchronisation; cudarc's per-buffer events would only add overhead.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let comm_stream = ctx.new_stream()?;
        Ok(Gpu {
            ordinal,
            ctx,
            stream,
            comm_stream,
        })
    }

    /// GPUs the driver sees.
    pub fn count() -> Result<usize, GpuError> {
        Ok(CudaContext::device_count()?.max(0) as usize)
    }

    /// Device name, e.g. "NVIDIA H200".
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown".into())
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.ctx.compute_capability().unwrap_or((0, 0))
    }

    /// Total device memory, bytes.
    pub fn total_bytes(&self) -> u64 {
        self.ctx.total_mem().map(|b| b as u64).unwrap_or(0)
    }

    /// Device memory in use by everything (this process's context, buffers, NCCL, other processes), bytes.
    pub fn used_bytes(&self) -> Result<u64, GpuError> {
        self.ctx.bind_to_thread()?;
        let (free, total) = dr::mem_get_info()?;
        Ok(total.saturating_sub(free) as u64)
    }

    /// Waits for both streams.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize()?;
        self.comm_stream.synchronize()?;
        Ok(())
    }

    /// A timing event.
    pub fn event(&self) -> Result<CudaEvent, GpuError> {
        Ok(self
            .ctx
            .new_event(Some(ds::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// CUDA driver API version, e.g. 12080 → "12.8".
    pub fn cuda_version() -> String {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: writes one int.
        let ok = unsafe { ds::cuDriverGetVersion(&mut v) } == ds::cudaError_enum::CUDA_SUCCESS;
        if ok {
            format!("{}.{}", v / 1000, (v % 1000) / 10)
        } else {
            String::new()
        }
    }
}

/// The kernel driver version from `/proc/driver/nvidia/version` (Linux), e.g. "570.124.06".
pub fn driver_version() -> String {
    std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|text| parse_driver_version(&text))
        .unwrap_or_default()
}

/// Pulls the version out of `/proc/driver/nvidia/version`'s first line.
pub fn parse_driver_version(text: &str) -> Option<String> {
    let line = text.lines().next()?;
    let after = line.split("Kernel Module").nth(1)?;
    after
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

/// A raw device allocation, freed on drop.
pub struct DeviceBuffer {
    ptr: ds::CUdeviceptr,
    bytes: u64,
    ctx: Arc<CudaContext>,
    /// The GPU's compute stream: uploads and downloads are ordered on it.
    stream: Arc<CudaStream>,
}

impl DeviceBuffer {
    /// Allocates `bytes` on `gpu` (at least one byte).
    pub fn alloc(gpu: &Gpu, bytes: u64) -> Result<DeviceBuffer, GpuError> {
        gpu.ctx.bind_to_thread()?;
        let size = usize::try_from(bytes.max(1)).map_err(|_| GpuError::OutOfMemory { bytes })?;
        // SAFETY: plain allocation; freed in Drop.
        match unsafe { dr::malloc_sync(size) } {
            Ok(ptr) => Ok(DeviceBuffer {
                ptr,
                bytes,
                ctx: gpu.ctx.clone(),
                stream: gpu.stream.clone(),
            }),
            Err(e) if e.0 == ds::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                Err(GpuError::OutOfMemory { bytes })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Device address of byte `offset`.
    pub fn at(&self, offset: u64) -> ds::CUdeviceptr {
        self.ptr + offset.min(self.bytes)
    }

    /// Device address of the start.
    pub fn ptr(&self) -> ds::CUdeviceptr {
        self.ptr
    }

    /// Size, bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Copies `data` to byte `offset`, after the GPU's queued compute-stream work, and waits.
    pub fn upload(&self, offset: u64, data: &[u8]) -> Result<(), GpuError> {
        if offset + data.len() as u64 > self.bytes {
            return Err(GpuError::Driver(format!(
                "upload of {} bytes at {offset} overruns a {}-byte buffer",
                data.len(),
                self.bytes
            )));
        }
        self.ctx.bind_to_thread()?;
        // Ordered on the compute stream and waited for: the synchronous copy runs on the
        // legacy default stream, which gpu-bench's non-blocking streams do not wait for.
        // SAFETY: bounds checked above; `data` outlives the copy (synchronised below).
        unsafe { dr::memcpy_htod_async(self.ptr + offset, data, self.stream.cu_stream()) }?;
        self.stream.synchronize()?;
        Ok(())
    }

    /// Copies `out.len()` bytes from byte `offset`, after the GPU's queued compute-stream work, and waits.
    pub fn download(&self, offset: u64, out: &mut [u8]) -> Result<(), GpuError> {
        if offset + out.len() as u64 > self.bytes {
            return Err(GpuError::Driver(format!(
                "download of {} bytes at {offset} overruns a {}-byte buffer",
                out.len(),
                self.bytes
            )));
        }
        self.ctx.bind_to_thread()?;
        // SAFETY: bounds checked above; `out` outlives the copy (synchronised below).
        unsafe { dr::memcpy_dtoh_async(out, self.ptr + offset, self.stream.cu_stream()) }?;
        self.stream.synchronize()?;
        Ok(())
    }

    /// Fills the buffer with `dtype` values of `rank`'s collective input
    /// pattern (repeating a block uploaded once, so GB buffers fill quickly).
    pub fn fill_pattern(&self, gpu: &Gpu, dtype: Dtype, rank: u32) -> Result<(), GpuError> {
        let elem = dtype.bytes();
        // The pattern repeats every 4 elements, so a block of 4·2^k elements can be tiled.
        let block_elems = (1u64 << 20).min(self.bytes / elem).max(1);
        let block = crate::data::input_bytes(dtype, rank, 0, block_elems - block_elems % 4);
        let block = if block.is_empty() {
            crate::data::input_bytes(dtype, rank, 0, (self.bytes / elem).max(1))
        } else {
            block
        };
        self.fill_tiled(gpu, &block)
    }

    /// Fills the buffer with standard-normal `dtype` values (a 1 Mi-element
    /// random block, tiled): the data GEMMs are timed on, like `torch.randn`.
    pub fn fill_random(&self, gpu: &Gpu, dtype: Dtype, seed: u64) -> Result<(), GpuError> {
        let elems = (1u64 << 20).min(self.bytes / dtype.bytes()).max(1);
        let block = random_block(dtype, seed, elems);
        self.fill_tiled(gpu, &block)
    }

    /// Uploads `block` at the start and doubles it on the device until the buffer is full.
    fn fill_tiled(&self, gpu: &Gpu, block: &[u8]) -> Result<(), GpuError> {
        let first = (block.len() as u64).min(self.bytes);
        self.upload(0, &block[..first as usize])?;
        let mut filled = first;
        self.ctx.bind_to_thread()?;
        while filled < self.bytes {
            let n = filled.min(self.bytes - filled);
            // SAFETY: both ranges lie inside this buffer and do not overlap.
            unsafe {
                dr::memcpy_dtod_async(
                    self.ptr + filled,
                    self.ptr,
                    n as usize,
                    gpu.stream.cu_stream(),
                )
            }?;
            filled += n;
        }
        gpu.stream.synchronize()?;
        Ok(())
    }
}

/// Random blocks by (type, seed, length).
type BlockCache = std::collections::HashMap<(Dtype, u64, u64), std::rc::Rc<Vec<u8>>>;

thread_local! {
    static RANDOM_BLOCKS: std::cell::RefCell<BlockCache> = Default::default();
}

/// [`crate::data::random_normal_bytes`], generated once per (type, seed, length):
/// the GEMM section fills two operands per shape, and generating 1 Mi normal
/// values each time would leave the GPU idle (and its clocks dropping) between shapes.
fn random_block(dtype: Dtype, seed: u64, elems: u64) -> std::rc::Rc<Vec<u8>> {
    RANDOM_BLOCKS.with(|cache| {
        cache
            .borrow_mut()
            .entry((dtype, seed, elems))
            .or_insert_with(|| {
                std::rc::Rc::new(crate::data::random_normal_bytes(dtype, seed, elems))
            })
            .clone()
    })
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_sync, freed once.
            let _ = unsafe { dr::free_sync(self.ptr) };
        }
    }
}

/// Measures time between two points on a stream.
pub struct Timer {
    start: CudaEvent,
    end: CudaEvent,
}

impl Timer {
    /// Two fresh events on `gpu`.
    pub fn new(gpu: &Gpu) -> Result<Timer, GpuError> {
        Ok(Timer {
            start: gpu.event()?,
            end: gpu.event()?,
        })
    }

    /// Marks the start on `stream`.
    pub fn start(&self, stream: &CudaStream) -> Result<(), GpuError> {
        self.start.record(stream)?;
        Ok(())
    }

    /// Marks the end on `stream`.
    pub fn stop(&self, stream: &CudaStream) -> Result<(), GpuError> {
        self.end.record(stream)?;
        Ok(())
    }

    /// Microseconds between start and end (waits for the end).
    pub fn elapsed_us(&self) -> Result<f64, GpuError> {
        self.end.synchronize()?;
        let ms = event_elapsed_ms(&self.start, &self.end)?;
        Ok(f64::from(ms) * 1e3)
    }
}

type ElapsedFn = unsafe extern "C" fn(*mut f32, ds::CUevent, ds::CUevent) -> ds::CUresult;

/// `cuEventElapsedTime`, looked up in the driver itself: cudarc's CUDA 13
/// bindings call `cuEventElapsedTime_v2`, which drivers older than CUDA 12.8
/// (R570) lack; the original symbol is in every driver.
fn event_elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f32, GpuError> {
    start.context().bind_to_thread()?;
    // SAFETY: the driver library is loaded (libs::check ran and a context exists);
    // both symbols have the signature (float*, CUevent, CUevent) -> CUresult.
    unsafe {
        let lib = ds::culib();
        let f: ElapsedFn = match lib.get::<ElapsedFn>(b"cuEventElapsedTime_v2\0") {
            Ok(sym) => *sym,
            Err(_) => match lib.get::<ElapsedFn>(b"cuEventElapsedTime\0") {
                Ok(sym) => *sym,
                Err(e) => {
                    return Err(GpuError::Driver(format!(
                        "no cuEventElapsedTime in the driver: {e}"
                    )))
                }
            },
        };
        let mut ms = 0f32;
        f(&mut ms, start.cu_event(), end.cu_event()).result()?;
        Ok(ms)
    }
}

/// NCCL's version as "2.26.2", or empty when it cannot be read.
pub fn nccl_version() -> String {
    match nr::get_nccl_version() {
        // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9.
        Ok(v) => format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100),
        Err(_) => String::new(),
    }
}

/// NCCL's version code (e.g. 22602), 0 when unknown.
pub fn nccl_version_code() -> i32 {
    nr::get_nccl_version().unwrap_or(0)
}

/// An NCCL communicator, destroyed on drop.
pub struct Comm {
    raw: ns::ncclComm_t,
    /// This member's rank in the communicator.
    pub rank: u32,
    /// Members.
    pub size: u32,
}

// SAFETY: an NCCL communicator may be used from any thread as long as calls are not concurrent;
// gpu-bench drives each from one thread at a time.
unsafe impl Send for Comm {}

impl Drop for Comm {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: created by NCCL, destroyed once.
            let _ = unsafe { nr::comm_destroy(self.raw) };
        }
    }
}

/// A fresh NCCL unique id as raw bytes (rank 0 sends these to the others).
pub fn nccl_unique_id() -> Result<Vec<u8>, GpuError> {
    let id = nr::get_uniqueid()?;
    Ok(id.internal.iter().map(|c| *c as u8).collect())
}

fn id_from_bytes(bytes: &[u8]) -> Result<ns::ncclUniqueId, GpuError> {
    if bytes.len() != 128 {
        return Err(GpuError::Nccl(format!(
            "unique id has {} bytes, expected 128",
            bytes.len()
        )));
    }
    let mut internal = [0 as std::ffi::c_char; 128];
    for (d, s) in internal.iter_mut().zip(bytes) {
        *d = *s as std::ffi::c_char;
    }
    Ok(ns::ncclUniqueId { internal })
}

impl Comm {
    /// Communicators over all `gpus` of this process (ranks in order).
    pub fn init_all(gpus: &[Gpu]) -> Result<Vec<Comm>, GpuError> {
        let n = gpus.len();
        let mut raw = vec![std::ptr::null_mut(); n];
        let ordinals: Vec<std::ffi::c_int> =
            gpus.iter().map(|g| g.ordinal as std::ffi::c_int).collect();
        // SAFETY: arrays of length n.
        unsafe { nr::comm_init_all(raw.as_mut_ptr(), n as std::ffi::c_int, ordinals.as_ptr()) }?;
        Ok(raw
            .into_iter()
            .enumerate()
            .map(|(rank, raw)| Comm {
                raw,
                rank: rank as u32,
                size: n as u32,
            })
            .collect())
    }

    /// This process's member of a communicator of `size` ranks created from `id_bytes`.
    pub fn init_rank(gpu: &Gpu, id_bytes: &[u8], rank: u32, size: u32) -> Result<Comm, GpuError> {
        let id = id_from_bytes(id_bytes)?;
        gpu.ctx.bind_to_thread()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw receives the new communicator.
        unsafe {
            nr::comm_init_rank(
                &mut raw,
                size as std::ffi::c_int,
                id,
                rank as std::ffi::c_int,
            )
        }?;
        Ok(Comm { raw, rank, size })
    }

    /// Splits each local communicator `parents[i]` into groups by `colors[i]`
    /// (`ncclCommSplit`, NCCL ≥ 2.18), keeping rank order.
    pub fn split(gpus: &[Gpu], parents: &[Comm], colors: &[u32]) -> Result<Vec<Comm>, GpuError> {
        let code = nccl_version_code();
        if code < 21800 {
            return Err(GpuError::Unsupported(format!(
                "sub-communicators need NCCL 2.18 or newer (ncclCommSplit); this NCCL reports {code}"
            )));
        }
        let mut raws = vec![std::ptr::null_mut(); parents.len()];
        nr::group_start()?;
        for (i, parent) in parents.iter().enumerate() {
            gpus[i].ctx.bind_to_thread()?;
            // SAFETY: valid parent communicator; a null config means defaults.
            let r = unsafe {
                ns::ncclCommSplit(
                    parent.raw,
                    colors[i] as std::ffi::c_int,
                    parent.rank as std::ffi::c_int,
                    &mut raws[i],
                    std::ptr::null_mut(),
                )
            };
            if let Err(e) = r.result() {
                let _ = nr::group_end();
                return Err(e.into());
            }
        }
        nr::group_end()?;
        let mut out = Vec::with_capacity(raws.len());
        for raw in raws {
            let mut rank = 0;
            let mut size = 0;
            // SAFETY: raw was just created.
            unsafe {
                rank = nr::comm_user_rank(raw).map(|r| r as u32).unwrap_or(rank);
                size = nr::comm_count(raw).map(|c| c as u32).unwrap_or(size);
            }
            out.push(Comm { raw, rank, size });
        }
        Ok(out)
    }
}

fn nccl_type(dtype: Dtype) -> Result<ns::ncclDataType_t, GpuError> {
    match dtype {
        Dtype::Fp32 => Ok(ns::ncclDataType_t::ncclFloat32),
        Dtype::Fp16 => Ok(ns::ncclDataType_t::ncclFloat16),
        Dtype::Bf16 => Ok(ns::ncclDataType_t::ncclBfloat16),
        Dtype::Fp8E4m3 => Err(GpuError::Unsupported(
            "collectives are benchmarked in fp32, fp16 and bf16".into(),
        )),
    }
}

/// Where one member's send and receive buffers are.
#[derive(Clone, Copy, Debug)]
pub struct CollArgs {
    /// Send buffer address.
    pub send: ds::CUdeviceptr,
    /// Receive buffer address (equal to, or inside, `send` for in-place).
    pub recv: ds::CUdeviceptr,
    /// Elements in the send buffer.
    pub send_count: u64,
    /// Elements in the receive buffer.
    pub recv_count: u64,
}

/// Enqueues `op` for one member on `stream`. The caller wraps the members of
/// this process in `group_start`/`group_end` (required when one thread drives
/// several GPUs, and for the send/recv pairs of all-to-all and send/recv).
pub fn enqueue(
    op: CollectiveOp,
    dtype: Dtype,
    comm: &Comm,
    a: CollArgs,
    stream: &CudaStream,
) -> Result<(), GpuError> {
    let t = nccl_type(dtype)?;
    let s = stream.cu_stream() as ns::cudaStream_t;
    let sum = ns::ncclRedOp_t::ncclSum;
    let send = a.send as *const std::ffi::c_void;
    let recv = a.recv as *mut std::ffi::c_void;
    let n = comm.size.max(1);
    let elem = dtype.bytes();
    // SAFETY: buffers were allocated for these counts by the caller.
    unsafe {
        match op {
            CollectiveOp::AllReduce => {
                nr::all_reduce(send, recv, a.send_count as usize, t, sum, comm.raw, s)?;
            }
            CollectiveOp::AllGather => {
                nr::all_gather(send, recv, a.send_count as usize, t, comm.raw, s)?;
            }
            CollectiveOp::ReduceScatter => {
                nr::reduce_scatter(send, recv, a.recv_count as usize, t, sum, comm.raw, s)?;
            }
            CollectiveOp::Broadcast => {
                nr::broadcast(send, recv, a.recv_count as usize, t, 0, comm.raw, s)?;
            }
            CollectiveOp::Reduce => {
                nr::reduce(send, recv, a.send_count as usize, t, sum, 0, comm.raw, s)?;
            }
            CollectiveOp::AllToAll => {
                let chunk = a.send_count / u64::from(n);
                for peer in 0..n {
                    let off = u64::from(peer) * chunk * elem;
                    nr::send(
                        (a.send + off) as *const _,
                        chunk as usize,
                        t,
                        peer as std::ffi::c_int,
                        comm.raw,
                        s,
                    )?;
                    nr::recv(
                        (a.recv + off) as *mut _,
                        chunk as usize,
                        t,
                        peer as std::ffi::c_int,
                        comm.raw,
                        s,
                    )?;
                }
            }
            CollectiveOp::SendRecv => {
                let next = (comm.rank + 1) % n;
                let prev = (comm.rank + n - 1) % n;
                nr::send(
                    send,
                    a.send_count as usize,
                    t,
                    next as std::ffi::c_int,
                    comm.raw,
                    s,
                )?;
                nr::recv(
                    recv,
                    a.recv_count as usize,
                    t,
                    prev as std::ffi::c_int,
                    comm.raw,
                    s,
                )?;
            }
        }
    }
    Ok(())
}

/// Runs `f` for every local member inside one NCCL group.
pub fn grouped<F>(members: usize, mut f: F) -> Result<(), GpuError>
where
    F: FnMut(usize) -> Result<(), GpuError>,
{
    nr::group_start()?;
    for i in 0..members {
        if let Err(e) = f(i) {
            let _ = nr::group_end();
            return Err(e);
        }
    }
    nr::group_end()?;
    Ok(())
}

/// How [`reduce_scalar`] combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// Reduces one f64 per local GPU over every rank of `comms`
/// and returns the result (the same on every rank). f64, so counts (wrong
/// elements, bytes) stay exact up to 2^53.
pub fn reduce_scalar(
    gpus: &[Gpu],
    comms: &[Comm],
    values: &[f64],
    combine: Combine,
) -> Result<f64, GpuError> {
    let bufs: Vec<DeviceBuffer> = gpus
        .iter()
        .map(|g| DeviceBuffer::alloc(g, 8))
        .collect::<Result<_, _>>()?;
    for (b, v) in bufs.iter().zip(values) {
        b.upload(0, &v.to_le_bytes())?;
    }
    let op = match combine {
        Combine::Sum => ns::ncclRedOp_t::ncclSum,
        Combine::Max => ns::ncclRedOp_t::ncclMax,
        Combine::Min => ns::ncclRedOp_t::ncclMin,
    };
    grouped(gpus.len(), |i| {
        gpus[i].ctx.bind_to_thread()?;
        // SAFETY: one-element buffers.
        unsafe {
            nr::all_reduce(
                bufs[i].ptr() as *const _,
                bufs[i].ptr() as *mut _,
                1,
                ns::ncclDataType_t::ncclFloat64,
                op,
                comms[i].raw,
                gpus[i].stream.cu_stream() as ns::cudaStream_t,
            )
        }?;
        Ok(())
    })?;
    for g in gpus {
        g.stream.synchronize()?;
    }
    let mut out = [0u8; 8];
    bufs[0].download(0, &mut out)?;
    Ok(f64::from_le_bytes(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_version_from_proc_text() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 00:13:51 UTC 2025\n\
                    GCC version:  gcc version 12.3.0";
        assert_eq!(parse_driver_version(text).as_deref(), Some("570.124.06"));
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.51.03  Release Build";
        assert_eq!(parse_driver_version(open).as_deref(), Some("575.51.03"));
        assert_eq!(parse_driver_version("garbage"), None);
    }
}
