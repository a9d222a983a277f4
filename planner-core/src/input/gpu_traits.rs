//! What a GPU preset states besides its datasheet figures: its usual server's host, how NCCL
//! sees that node, what joins its GPUs, the measured shares of its links and kernels, and which
//! serving-kernel measurements apply to it. Every preset in [`crate::input::gpu_presets`] states
//! each of these (the struct has no default, so a new preset that omits one does not compile);
//! a GPU whose id names no preset (a custom GPU) takes [`CUSTOM_GPU_TRAITS`].

use crate::input::collective::Collective;
use crate::input::host::HostSpec;
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::nccl_node::NcclNode;

/// One GPU preset's traits.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTraits {
    /// The host of the GPU's usual server ([`crate::input::host`]); `None` where no server
    /// datasheet was found (set `cluster.host` by hand).
    pub host: Option<HostSpec>,
    /// The node as NCCL's tuner sees it ([`crate::input::nccl_node`]); `None` for a GPU whose
    /// collectives NCCL does not run (RCCL) or whose server is not described.
    pub nccl: Option<NcclNode>,
    /// Shares of the links' line rates the collectives reach.
    pub links: LinkShares,
    /// What joins the GPUs of the node: NVLink, Infinity Fabric or PCIe alone.
    pub intra_node_link: IntraNodeLink,
    /// Measured shares of the datasheet compute and HBM rates.
    pub compute: ComputeShares,
    /// Which serving-kernel measurements apply to this GPU.
    pub serving: ServingKernels,
    /// Datasheet figures beyond the spec's rates: FP6 and FP4 peaks, board power.
    pub sheet: DatasheetExtras,
}

/// One datasheet figure of a preset: stated, absent from the part, or not in this record
/// (unpublished, or not entered); the page names the last two instead of guessing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SheetFigure {
    /// The datasheet's figure, in the field's unit.
    Stated(f64),
    /// The part has no such unit (FP4 tensor cores before Blackwell and CDNA 4).
    NotOnThisPart,
    /// No figure in this record: unpublished, or not entered.
    NotStated,
}

impl SheetFigure {
    /// The figure, where stated.
    pub fn value(self) -> Option<f64> {
        match self {
            SheetFigure::Stated(v) => Some(v),
            _ => None,
        }
    }
}

/// Which block-scaled 4-bit formats a part's FP4 tensor cores take natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp4Formats {
    /// No FP4 tensor cores (or none recorded): FP4 weights are dequantized before the GEMM.
    None,
    /// NVFP4 and MXFP4 (Blackwell's fifth-generation tensor cores, `tcgen05.mma` block-scaled
    /// kinds `mxf4` and `mxf4nvf4`: PTX ISA 8.7, "Block Scaling").
    NvFp4AndMxFp4,
    /// MXFP4 only (AMD CDNA 4: OCP MX formats, no NVFP4).
    MxFp4,
}

/// Datasheet figures beyond [`crate::input::hardware::GpuSpec`]'s rates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DatasheetExtras {
    /// Dense FP6 tensor rate, FLOP/s.
    pub fp6_flops_per_s: SheetFigure,
    /// Dense FP4 tensor rate, FLOP/s.
    pub fp4_flops_per_s: SheetFigure,
    /// The 4-bit formats the FP4 rate applies to (board power is the preset's
    /// `board_power_w`, one fact in one place).
    pub fp4_formats: Fp4Formats,
}

impl DatasheetExtras {
    /// A part without FP6/FP4 tensor cores (before Blackwell and CDNA 4).
    pub const NO_FP4_UNITS: DatasheetExtras = DatasheetExtras {
        fp6_flops_per_s: SheetFigure::NotOnThisPart,
        fp4_flops_per_s: SheetFigure::NotOnThisPart,
        fp4_formats: Fp4Formats::None,
    };

    /// A record that states none of these figures (a custom GPU, or a part not entered yet).
    pub const NOT_STATED: DatasheetExtras = DatasheetExtras {
        fp6_flops_per_s: SheetFigure::NotStated,
        fp4_flops_per_s: SheetFigure::NotStated,
        fp4_formats: Fp4Formats::None,
    };

    /// The dense FP4 rate where the tensor cores take `nvfp4` (NVFP4, else MXFP4) natively.
    pub fn native_fp4_flops_per_s(&self, nvfp4: bool) -> Option<f64> {
        let native = match self.fp4_formats {
            Fp4Formats::None => false,
            Fp4Formats::NvFp4AndMxFp4 => true,
            Fp4Formats::MxFp4 => !nvfp4,
        };
        if native {
            self.fp4_flops_per_s.value()
        } else {
            None
        }
    }
}

/// The share of each link's line rate that NCCL's (or RCCL's) collectives reach as nccl-tests
/// *bus* bandwidth on the GPU's node ([`crate::input::link_efficiency`]); `None` where no
/// figure is cited (the line rate applies).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShares {
    /// The intra-node link (NVLink, xGMI).
    pub intra_node: Option<IntraNodeShares>,
    /// The inter-node NIC: a property of the card (InfiniBand NDR or HDR), whatever the
    /// collective.
    pub inter_node: Option<f64>,
}

/// Intra-node bus-bandwidth shares: all-reduce apart, where the switch reduces (NVLS).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntraNodeShares {
    /// Share an all-reduce reaches.
    pub all_reduce: f64,
    /// Share every other operation reaches (NCCL's per-link ring figure).
    pub other_ops: f64,
}

impl IntraNodeShares {
    /// The same share for every operation.
    pub const fn uniform(share: f64) -> Self {
        IntraNodeShares {
            all_reduce: share,
            other_ops: share,
        }
    }

    /// The share `op` reaches.
    pub fn of(&self, op: Collective) -> f64 {
        if op == Collective::AllReduce {
            self.all_reduce
        } else {
            self.other_ops
        }
    }
}

/// Measured shares of the datasheet rates, each relative to what the default curves assume.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ComputeShares {
    /// Share of the datasheet HBM bandwidth streaming kernels reach, where measured for this
    /// GPU; `None`: `CostOptions::hbm_achievable_fraction` applies.
    pub hbm_stream_fraction: Option<f64>,
    /// Share of the datasheet tensor rates (BF16 and FP8) sustained at the power limit the GPU
    /// runs at ([`crate::input::power_limit`]); 1 at the datasheet's own limit.
    pub tensor_fraction_at_power_limit: f64,
    /// A BF16 GEMM's share of its BF16 peak relative to the H100 SXM's, whose class of GPU the
    /// default curve ([`crate::input::gemm_efficiency::GemmEfficiency`]) was measured on: the
    /// ratio of the two BF16 Maximum Achievable Matmul FLOPS fractions (stas00/ml-engineering
    /// compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table",
    /// mamf-finder.py). 1 where the row is not lower there or not measured.
    pub bf16_gemm_relative_to_h100: f64,
    /// An FP8 GEMM's share of its FP8 peak relative to a BF16 GEMM's share of its BF16 peak on
    /// the same GPU (the same table, BF16 and `float8_e4m3fn` rows): an FP8 GEMM runs at the
    /// BF16 curve times this. 1 where the FP8 row is not measured (or there is no FP8).
    pub fp8_gemm_relative_to_bf16: f64,
    /// HBM bytes per element that an FP8 GEMM input's second, transposed FP8 copy adds to its
    /// cast: 1 (one more FP8 write) where FP8 GEMMs run in the TN layout only, 0 where any
    /// layout runs or the rule was not found. Hopper's FP8 GEMMs are TN-only, so every FP8
    /// operand is kept in both layouts: Transformer Engine casts a linear layer's input with
    /// `fp8_cast_transpose_fused` ("FP8 input for forward, FP8 input transpose for backward
    /// wgrad", transformer_engine/pytorch/module/linear.py), its `dY` likewise in
    /// `grad_output_preprocess`, and its weight into `weight_fp8` and `weight_t_fp8`;
    /// transformer_engine/common/gemm/cublaslt_gemm.cu: "Hopper only supports TN GEMMs for
    /// FP8", "Blackwell supports any GEMM layout for FP8" (cuBLAS docs, `cublasLtMatmul`: "A
    /// must be transposed and B non-transposed (The "TN" format)"). The fused kernel writes
    /// the second copy in the same pass (one BF16 read, two FP8 writes); a transpose run as
    /// its own pass (`fp8_transpose`, TE's sequence-parallel and LayerNormLinear paths) reads
    /// 1 B more, which this lower bound leaves out. torchao's Float8 training (torchtitan)
    /// keeps the second copy too: torchao/float8/float8_linear.py casts `dY` and `X` again for
    /// grad_weight (`grad_output_reshaped_maybe_fp8_dim1`), `torch._scaled_mm` taking its
    /// second operand column-major.
    pub fp8_transpose_bytes_per_element: f64,
}

impl ComputeShares {
    /// A GPU with no measured share of its own: its datasheet rates on the default curves, at
    /// the power its datasheet rates are quoted for, with its FP8 layout rule
    /// ([`ComputeShares::fp8_transpose_bytes_per_element`]).
    pub const fn unmeasured(fp8_transpose_bytes_per_element: f64) -> Self {
        ComputeShares {
            hbm_stream_fraction: None,
            tensor_fraction_at_power_limit: 1.0,
            bf16_gemm_relative_to_h100: 1.0,
            fp8_gemm_relative_to_bf16: 1.0,
            fp8_transpose_bytes_per_element,
        }
    }
}

/// Which measured serving kernels price this GPU's decode step (each measured on one GPU and
/// carried to the GPUs that run the same kernel on the same silicon); `false`: the plain
/// model applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServingKernels {
    /// vLLM's custom all-reduce latency table ([`crate::serving::custom_all_reduce`]), on the
    /// NVLink 4 / NVSwitch fabric it was measured on.
    pub custom_all_reduce: bool,
    /// TensorRT-LLM's XQA decode-attention share with an FP8 KV cache
    /// ([`crate::serving::decode_attention`]).
    pub xqa_fp8_kv: bool,
    /// The per-kernel launch cost inside a CUDA graph ([`crate::serving::kernel_gaps`]).
    pub graph_kernel_launch: bool,
    /// The FP8 decode-GEMM streaming share ([`crate::serving::weight_stream`]).
    pub fp8_weight_stream: bool,
}

/// A GPU no preset describes: no server, NCCL's α–β form, line-rate links, the default curves
/// and no serving-kernel measurement.
pub const CUSTOM_GPU_TRAITS: GpuTraits = GpuTraits {
    host: None,
    nccl: None,
    links: LinkShares {
        intra_node: None,
        inter_node: None,
    },
    intra_node_link: IntraNodeLink::Unstated,
    compute: ComputeShares::unmeasured(0.0),
    serving: ServingKernels {
        custom_all_reduce: false,
        xqa_fp8_kv: false,
        graph_kernel_launch: false,
        fp8_weight_stream: false,
    },
    sheet: DatasheetExtras::NOT_STATED,
};

impl LinkShares {
    /// The intra-node share `op` reaches, or `None` where no figure is cited.
    pub fn intra_node_share(&self, op: Collective) -> Option<f64> {
        self.intra_node.map(|s| s.of(op))
    }
}
