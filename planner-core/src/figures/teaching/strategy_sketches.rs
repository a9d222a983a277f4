//! The six strategy sketches: what each rank holds under DP, ZeRO-1/2/3, TP and PP.

use super::*;

// ---------------------------------------------------------------------------
// Six strategy sketches
// ---------------------------------------------------------------------------

/// A fraction `part/of` (`1/1` is the whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// Which part, 0-based.
    pub part: u32,
    /// Into how many parts.
    pub of: u32,
}

impl Share {
    const WHOLE: Share = Share { part: 0, of: 1 };
}

/// How a GPU holds each layer's weights in a sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WeightSplit {
    /// Whole layers.
    Whole,
    /// A flat shard of every layer, gathered only while computing (FSDP).
    Shard,
    /// A column/row slice of every matrix (TP).
    Slice,
}

/// What one of the four GPUs holds and computes in one strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SketchGpu {
    /// Layers held, `[first, last]` of the 4 drawn layers (1-based).
    pub layers: [u32; 2],
    /// How the held layers are split.
    pub weights: WeightSplit,
    /// Which share of each held layer's weights.
    pub weight_share: Share,
    /// Which batch it processes (`part` of `of`; `of = 1`: the same batch as every GPU).
    pub batch: Share,
    /// Which part of each sequence it processes.
    pub sequence: Share,
    /// The expert it holds (EP), if any.
    pub expert: Option<u32>,
}

/// One strategy sketch on four GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrategySketch {
    /// Stable id: ddp, fsdp, tp, cp, pp, ep.
    pub id: String,
    /// Label.
    pub label: String,
    /// The collective it introduces (the article's table).
    pub collective: Collective,
    /// The four GPUs.
    pub gpus: [SketchGpu; 4],
}

/// The article's six sketches of four GPUs: DDP (whole model, own batch), FSDP
/// (a quarter of every layer, own batch), TP (a slice of every layer, same batch),
/// CP (a part of the sequence), PP (one layer group), EP (one expert).
pub fn strategy_sketches() -> [StrategySketch; 6] {
    let each = |f: fn(u32) -> SketchGpu| [f(0), f(1), f(2), f(3)];
    [
        StrategySketch {
            id: "ddp".into(),
            label: "DDP".into(),
            collective: Collective::AllReduce,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "fsdp".into(),
            label: "FSDP / ZeRO-3".into(),
            collective: Collective::AllGather,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Shard,
                weight_share: Share { part: g, of: 4 },
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "tp".into(),
            label: "Tensor parallel".into(),
            collective: Collective::AllReduce,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Slice,
                weight_share: Share { part: g, of: 4 },
                batch: Share::WHOLE,
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "cp".into(),
            label: "Context parallel".into(),
            collective: Collective::SendRecv,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share::WHOLE,
                sequence: Share { part: g, of: 4 },
                expert: None,
            }),
        },
        StrategySketch {
            id: "pp".into(),
            label: "Pipeline parallel".into(),
            collective: Collective::SendRecv,
            gpus: each(|g| SketchGpu {
                layers: [g + 1, g + 1],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share::WHOLE,
                sequence: Share::WHOLE,
                expert: None,
            }),
        },
        StrategySketch {
            id: "ep".into(),
            label: "Expert parallel".into(),
            collective: Collective::AllToAll,
            gpus: each(|g| SketchGpu {
                layers: [1, 4],
                weights: WeightSplit::Whole,
                weight_share: Share::WHOLE,
                batch: Share { part: g, of: 4 },
                sequence: Share::WHOLE,
                expert: Some(g),
            }),
        },
    ]
}
