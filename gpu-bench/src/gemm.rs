//! GEMM throughput through cuBLASLt: square sizes and the per-rank matrix
//! multiplies of a model's layer at a tensor-parallel degree.

use cudarc::cublaslt::{result as lr, sys as ls};
use planner_core::edges::report::{gemm_tflops, Dtype, GemmResult};
use planner_core::input::model::{FfnKind, ModelSpec};

use crate::gpu::{DeviceBuffer, Gpu, GpuError, Timer};

/// One GEMM to time: `C[m×n] = A[m×k] · B[k×n]` (m = tokens for layer shapes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of the output (tokens).
    pub m: u64,
    /// Columns of the output (output features on this rank).
    pub n: u64,
    /// Inner dimension (input features on this rank).
    pub k: u64,
    /// What it is.
    pub label: String,
}

/// Square GEMMs of these sizes.
pub fn square_shapes(sizes: &[u64]) -> Vec<GemmShape> {
    sizes
        .iter()
        .map(|&s| GemmShape {
            m: s,
            n: s,
            k: s,
            label: "square".into(),
        })
        .collect()
}

/// The forward GEMMs one rank runs for one decoder layer of `spec` at tensor
/// parallelism `tp` over `tokens` tokens: QKV and FFN-in are column-parallel
/// (output features split), attention-out and FFN-down row-parallel (input split).
// Shoeybi et al. 2019 (Megatron-LM) §3, Fig. 3: column-parallel first GEMM, row-parallel second.
pub fn layer_shapes(
    model_id: &str,
    spec: &ModelSpec,
    tp: u32,
    tokens: u64,
) -> Result<Vec<GemmShape>, String> {
    let tp64 = u64::from(tp.max(1));
    let h = u64::from(spec.hidden);
    let split = |what: &str, value: u64| -> Result<u64, String> {
        if !value.is_multiple_of(tp64) || value < tp64 {
            Err(format!(
                "{model_id}: {what} = {value} does not split evenly over --tp {tp}"
            ))
        } else {
            Ok(value / tp64)
        }
    };
    if spec.mla.is_some() {
        return Err(format!(
            "{model_id}: multi-head latent attention shapes are not benchmarked; choose a GQA/MHA model"
        ));
    }
    let q = u64::from(spec.heads) * u64::from(spec.head_dim);
    let kv = u64::from(spec.kv_heads) * u64::from(spec.head_dim);
    let f = u64::from(spec.ffn);
    let ffn_in_matrices = spec.ffn_kind.matrices() - 1;
    let tag = |name: &str| format!("{name} tp={tp} ({model_id})");
    let mut out = vec![
        GemmShape {
            m: tokens,
            n: split("query+key+value features", q + 2 * kv)?,
            k: h,
            label: tag("qkv"),
        },
        GemmShape {
            m: tokens,
            n: h,
            k: split("attention features", q)?,
            label: tag("attn out"),
        },
    ];
    let ffn_in = match spec.ffn_kind {
        FfnKind::SwiGlu => "mlp gate+up",
        FfnKind::GeluMlp => "mlp up",
    };
    out.push(GemmShape {
        m: tokens,
        n: split("ffn width", f)? * ffn_in_matrices,
        k: h,
        label: tag(ffn_in),
    });
    out.push(GemmShape {
        m: tokens,
        n: h,
        k: split("ffn width", f)?,
        label: tag("mlp down"),
    });
    Ok(out)
}

/// A cuBLASLt handle and its workspace.
pub struct Blas {
    handle: ls::cublasLtHandle_t,
    workspace: DeviceBuffer,
}

/// Workspace cuBLASLt may use (NVIDIA recommends 32 MiB on Hopper).
const WORKSPACE_BYTES: u64 = 32 << 20;

fn blas_err(e: lr::CublasError) -> GpuError {
    if e.0 == ls::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED {
        GpuError::Unsupported(format!("cuBLASLt has no algorithm for this case ({e:?})"))
    } else {
        GpuError::Blas(format!("{e:?}"))
    }
}

impl Blas {
    /// A handle on `gpu`. Check [`crate::libs::Lib::CublasLt`] first.
    pub fn new(gpu: &Gpu) -> Result<Blas, GpuError> {
        gpu.ctx.bind_to_thread()?;
        let handle = lr::create_handle().map_err(blas_err)?;
        let workspace = DeviceBuffer::alloc(gpu, WORKSPACE_BYTES)?;
        Ok(Blas { handle, workspace })
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: created in new, destroyed once.
        let _ = unsafe { lr::destroy_handle(self.handle) };
    }
}

/// Descriptors and the chosen algorithm for one shape, destroyed on drop.
pub struct GemmPlan {
    desc: ls::cublasLtMatmulDesc_t,
    a: ls::cublasLtMatrixLayout_t,
    b: ls::cublasLtMatrixLayout_t,
    c: ls::cublasLtMatrixLayout_t,
    algo: ls::cublasLtMatmulAlgo_t,
    /// The shape.
    pub shape: GemmShape,
    /// Input type.
    pub dtype: Dtype,
}

impl Drop for GemmPlan {
    fn drop(&mut self) {
        // SAFETY: each created once in plan().
        unsafe {
            let _ = lr::destroy_matrix_layout(self.a);
            let _ = lr::destroy_matrix_layout(self.b);
            let _ = lr::destroy_matrix_layout(self.c);
            let _ = lr::destroy_matmul_desc(self.desc);
        }
    }
}

fn cuda_type(dtype: Dtype) -> ls::cudaDataType {
    match dtype {
        Dtype::Fp32 => ls::cudaDataType::CUDA_R_32F,
        Dtype::Fp16 => ls::cudaDataType::CUDA_R_16F,
        Dtype::Bf16 => ls::cudaDataType::CUDA_R_16BF,
        Dtype::Fp8E4m3 => ls::cudaDataType::CUDA_R_8F_E4M3,
    }
}

/// Output type: FP8 GEMMs write BF16.
pub fn output_dtype(dtype: Dtype) -> Dtype {
    match dtype {
        Dtype::Fp8E4m3 => Dtype::Bf16,
        d => d,
    }
}

/// Whether the device can run `dtype` GEMMs on tensor cores.
pub fn supported(dtype: Dtype, compute_capability: (i32, i32)) -> Result<(), String> {
    let (major, minor) = compute_capability;
    match dtype {
        Dtype::Bf16 if major < 8 => Err(format!(
            "BF16 needs compute capability 8.0 or newer (this GPU is {major}.{minor})"
        )),
        // FP8 tensor cores: Ada (8.9) and Hopper (9.0) onwards.
        Dtype::Fp8E4m3 if (major, minor) < (8, 9) => Err(format!(
            "FP8 needs compute capability 8.9 or newer (this GPU is {major}.{minor})"
        )),
        _ => Ok(()),
    }
}

/// One operand's cuBLASLt (column-major) layout: rows, columns, leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Leading dimension (elements between columns).
    pub ld: u64,
}

/// The "TN" layouts of `shape` in cuBLASLt's column-major terms: A = W (k×n,
/// used transposed), B = X (k×m), C = D (n×m), so `D = Aᵀ·B`. In row-major
/// terms that is `Y[m×n] = X[m×k] · W[n×k]ᵀ`, i.e. `torch.nn.functional.linear`
/// (`x @ w.t()` with `w` a contiguous n×k tensor): W's rows are output
/// features, X's rows are tokens. FP8 on Hopper accepts only this layout.
pub fn tn_layouts(shape: &GemmShape) -> [Layout; 3] {
    let (m, n, k) = (shape.m, shape.n, shape.k);
    [
        Layout {
            rows: k,
            cols: n,
            ld: k,
        },
        Layout {
            rows: k,
            cols: m,
            ld: k,
        },
        Layout {
            rows: n,
            cols: m,
            ld: n,
        },
    ]
}

impl GemmPlan {
    /// Chooses an algorithm for `shape` in `dtype` (optionally with a fused GELU
    /// epilogue), in the [`tn_layouts`] — the layout FP8 requires, and the one
    /// PyTorch uses for `x @ w.t()`.
    pub fn new(
        blas: &Blas,
        shape: &GemmShape,
        dtype: Dtype,
        gelu: bool,
    ) -> Result<GemmPlan, GpuError> {
        let (m, n, k) = (shape.m, shape.n, shape.k);
        if dtype == Dtype::Fp8E4m3 && (m % 16 != 0 || n % 16 != 0 || k % 16 != 0) {
            return Err(GpuError::Unsupported(format!(
                "FP8 GEMMs need m, n, k divisible by 16 (got {m}×{n}×{k})"
            )));
        }
        let in_t = cuda_type(dtype);
        let out_t = cuda_type(output_dtype(dtype));
        let compute = ls::cublasComputeType_t::CUBLAS_COMPUTE_32F;
        let desc =
            lr::create_matmul_desc(compute, ls::cudaDataType::CUDA_R_32F).map_err(blas_err)?;
        let [la, lb, lc] = tn_layouts(shape);
        let layout = |t, l: Layout| lr::create_matrix_layout(t, l.rows, l.cols, l.ld as i64);
        let a = layout(in_t, la).map_err(blas_err)?;
        let b = layout(in_t, lb).map_err(blas_err)?;
        let c = layout(out_t, lc).map_err(blas_err)?;
        let mut plan = GemmPlan {
            desc,
            a,
            b,
            c,
            // SAFETY: plain-old-data, overwritten by the heuristic below.
            algo: unsafe { std::mem::zeroed() },
            shape: shape.clone(),
            dtype,
        };
        let transpose: i32 = 1; // CUBLAS_OP_T
        let no_transpose: i32 = 0; // CUBLAS_OP_N
                                   // SAFETY: attribute buffers are live for the call and sized as cuBLASLt expects (int32 / uint32 / size_t).
        unsafe {
            lr::set_matmul_desc_attribute(
                desc,
                ls::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                (&transpose) as *const i32 as *const _,
                std::mem::size_of::<i32>(),
            )
            .map_err(blas_err)?;
            lr::set_matmul_desc_attribute(
                desc,
                ls::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB,
                (&no_transpose) as *const i32 as *const _,
                std::mem::size_of::<i32>(),
            )
            .map_err(blas_err)?;
            if gelu {
                let epilogue = ls::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU;
                lr::set_matmul_desc_attribute(
                    desc,
                    ls::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
                    (&epilogue) as *const ls::cublasLtEpilogue_t as *const _,
                    std::mem::size_of::<ls::cublasLtEpilogue_t>(),
                )
                .map_err(blas_err)?;
            }
            let pref = lr::create_matmul_pref().map_err(blas_err)?;
            let ws: usize = WORKSPACE_BYTES as usize;
            let r = lr::set_matmul_pref_attribute(
                pref,
                ls::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws) as *const usize as *const _,
                std::mem::size_of::<usize>(),
            )
            .and_then(|_| lr::get_matmul_algo_heuristic(blas.handle, desc, a, b, c, c, pref));
            let _ = lr::destroy_matmul_pref(pref);
            plan.algo = r.map_err(blas_err)?.algo;
        }
        Ok(plan)
    }

    /// Enqueues `D = W·X` (`w`: k×n weights, `x`: k×m activations, `d`: n×m output) on `stream`.
    pub fn run(
        &self,
        blas: &Blas,
        w: u64,
        x: u64,
        d: u64,
        stream: &cudarc::driver::CudaStream,
    ) -> Result<(), GpuError> {
        let alpha: f32 = 1.0;
        let beta: f32 = 0.0;
        // SAFETY: buffers sized by the caller for this plan's shape and type.
        unsafe {
            lr::matmul(
                blas.handle,
                self.desc,
                (&alpha) as *const f32 as *const _,
                (&beta) as *const f32 as *const _,
                w as *const _,
                self.a,
                x as *const _,
                self.b,
                d as *const _,
                self.c,
                d as *mut _,
                self.c,
                &self.algo,
                blas.workspace.ptr() as *mut _,
                WORKSPACE_BYTES as usize,
                stream.cu_stream() as ls::cudaStream_t,
            )
        }
        .map_err(blas_err)
    }
}

/// Bytes of the three operands of `shape` in `dtype`: (weights, activations, output).
pub fn operand_bytes(shape: &GemmShape, dtype: Dtype) -> (u64, u64, u64) {
    let e = dtype.bytes();
    let o = output_dtype(dtype).bytes();
    (
        shape.k * shape.n * e,
        shape.k * shape.m * e,
        shape.n * shape.m * o,
    )
}

/// Seed of the random operands (weights, activations) of [`bench_gemm`].
const SEED_W: u64 = 0x5eed_0001;
const SEED_X: u64 = 0x5eed_0002;

/// Times one GEMM: `warmup` untimed runs, then the mean of `iters` (CUDA
/// events around the timed loop on the GPU's compute stream), on
/// standard-normal operands — as `scripts/gpu_check.py` times PyTorch.
pub fn bench_gemm(
    gpu: &Gpu,
    blas: &Blas,
    shape: &GemmShape,
    dtype: Dtype,
    warmup: u32,
    iters: u32,
) -> Result<GemmResult, GpuError> {
    gpu.ctx.bind_to_thread()?;
    let plan = GemmPlan::new(blas, shape, dtype, false)?;
    let (wb, xb, db) = operand_bytes(shape, dtype);
    let w = DeviceBuffer::alloc(gpu, wb)?;
    let x = DeviceBuffer::alloc(gpu, xb)?;
    let d = DeviceBuffer::alloc(gpu, db)?;
    // Random operands: on constant or small-integer data tensor cores draw less
    // power and clock higher (an 8192³ bf16 product on an H200 was seen ~13%
    // faster on zeros than on randn), which would not be what models see.
    w.fill_random(gpu, dtype, SEED_W)?;
    x.fill_random(gpu, dtype, SEED_X)?;
    for _ in 0..warmup {
        plan.run(blas, w.ptr(), x.ptr(), d.ptr(), &gpu.stream)?;
    }
    let timer = Timer::new(gpu)?;
    timer.start(&gpu.stream)?;
    for _ in 0..iters.max(1) {
        plan.run(blas, w.ptr(), x.ptr(), d.ptr(), &gpu.stream)?;
    }
    timer.stop(&gpu.stream)?;
    let time_us = timer.elapsed_us()? / f64::from(iters.max(1));
    Ok(GemmResult {
        m: shape.m,
        n: shape.n,
        k: shape.k,
        dtype,
        label: shape.label.clone(),
        time_us,
        tflops: gemm_tflops(shape.m, shape.n, shape.k, time_us),
    })
}

/// The GEMM [`spin_up`] repeats (gpu_check.py spins PyTorch up with the same one).
pub const SPIN_UP_SIZE: u64 = 4096;

/// Runs untimed `SPIN_UP_SIZE`³ GEMMs of `dtype` for at least `millis` ms of
/// wall time, so the first timed GEMM does not start at idle clocks (a few
/// warm-up iterations of a small shape take well under a millisecond).
pub fn spin_up(gpu: &Gpu, blas: &Blas, dtype: Dtype, millis: u64) -> Result<(), GpuError> {
    gpu.ctx.bind_to_thread()?;
    let shape = square_shapes(&[SPIN_UP_SIZE]).remove(0);
    let plan = GemmPlan::new(blas, &shape, dtype, false)?;
    let (wb, xb, db) = operand_bytes(&shape, dtype);
    let w = DeviceBuffer::alloc(gpu, wb)?;
    let x = DeviceBuffer::alloc(gpu, xb)?;
    let d = DeviceBuffer::alloc(gpu, db)?;
    w.fill_random(gpu, dtype, SEED_W)?;
    x.fill_random(gpu, dtype, SEED_X)?;
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_millis(millis) {
        for _ in 0..8 {
            plan.run(blas, w.ptr(), x.ptr(), d.ptr(), &gpu.stream)?;
        }
        gpu.stream.synchronize()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_70b_shapes_at_tp8() {
        let spec = planner_core::resolve::presets::model_preset("llama-3.1-70b").unwrap();
        let s = layer_shapes("llama-3.1-70b", &spec, 8, 4096).unwrap();
        // 64 query heads + 2×8 KV heads of 128 → 10240 features, 1280 per rank.
        assert_eq!((s[0].m, s[0].n, s[0].k), (4096, 1280, 8192));
        assert_eq!((s[1].n, s[1].k), (8192, 1024));
        // SwiGLU gate and up fused: 2 × 28672 / 8.
        assert_eq!((s[2].n, s[2].k), (7168, 8192));
        assert_eq!((s[3].n, s[3].k), (8192, 3584));
        assert!(s[2].label.contains("gate+up"));
    }

    #[test]
    fn gpt3_shapes_and_bad_tp() {
        let spec = planner_core::resolve::presets::model_preset("gpt3-175b").unwrap();
        let s = layer_shapes("gpt3-175b", &spec, 8, 2048).unwrap();
        assert_eq!(s[0].n, 3 * 12288 / 8);
        assert_eq!(s[2].n, 4 * 12288 / 8);
        let err = layer_shapes(
            "llama-3.1-70b",
            &planner_core::resolve::presets::model_preset("llama-3.1-70b").unwrap(),
            3,
            1,
        )
        .unwrap_err();
        assert!(err.contains("--tp 3"), "{err}");
    }

    #[test]
    fn tn_layouts_multiply_and_fit_the_buffers() {
        for (m, n, k) in [(4096, 1280, 8192), (512, 57344, 8192), (28672, 8192, 2048)] {
            let shape = GemmShape {
                m,
                n,
                k,
                label: String::new(),
            };
            let [a, b, c] = tn_layouts(&shape);
            // op(A) = Aᵀ is a.cols × a.rows; op(B) = B is b.rows × b.cols.
            assert_eq!(a.rows, b.rows, "inner dimensions agree");
            assert_eq!((a.cols, b.cols), (c.rows, c.cols), "Aᵀ·B has C's shape");
            assert_eq!(c.rows, n);
            assert_eq!(c.cols, m);
            // Packed column-major: each leading dimension is its row count.
            for l in [a, b, c] {
                assert_eq!(l.ld, l.rows);
            }
            // The buffers bench_gemm allocates hold exactly these matrices.
            for dtype in [Dtype::Bf16, Dtype::Fp8E4m3] {
                let (wb, xb, db) = operand_bytes(&shape, dtype);
                assert_eq!(wb, a.rows * a.cols * dtype.bytes());
                assert_eq!(xb, b.rows * b.cols * dtype.bytes());
                assert_eq!(db, c.rows * c.cols * output_dtype(dtype).bytes());
            }
        }
    }

    #[test]
    fn fp8_support_by_compute_capability() {
        assert!(supported(Dtype::Fp8E4m3, (9, 0)).is_ok());
        assert!(supported(Dtype::Fp8E4m3, (8, 9)).is_ok());
        assert!(supported(Dtype::Fp8E4m3, (8, 0)).is_err());
        assert!(supported(Dtype::Bf16, (7, 0)).is_err());
        assert_eq!(
            operand_bytes(&square_shapes(&[1024])[0], Dtype::Fp8E4m3),
            (1 << 20, 1 << 20, 2 << 20)
        );
    }
}
