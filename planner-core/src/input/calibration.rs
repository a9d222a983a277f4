//! The calibration summary: what a fit to measurements found (α–β per
//! collective and link, the GEMM efficiency curve), numbers only, small enough
//! for a share link. The fitting lives in [`crate::edges::calibration_fit`];
//! the time model applies a summary in place of its assumed link figures and
//! GEMM curve, and every prediction then says which inputs were measured.

use serde::{Deserialize, Serialize};

use crate::input::collective::{Collective, LinkDomain};
use crate::input::gemm_efficiency::GemmEfficiency;

/// Current summary schema version.
pub const CALIBRATION_VERSION: u32 = 1;

/// One timed collective.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommSample {
    /// Operation.
    pub op: Collective,
    /// Ranks in the group.
    pub ranks: u64,
    /// Ranks of the group on each node.
    pub ranks_per_node: u64,
    /// Size in nccl-tests convention, bytes.
    pub bytes: f64,
    /// Time of one operation, seconds.
    pub time_s: f64,
}

/// One timed GEMM `m × k · k × n`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmSample {
    /// Rows of the output.
    pub m: u64,
    /// Columns of the output.
    pub n: u64,
    /// Inner dimension.
    pub k: u64,
    /// Achieved rate, FLOP/s.
    pub flops_per_s: f64,
}

/// Fitted α–β of one operation on one link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FittedLink {
    /// Operation.
    pub op: Collective,
    /// Link.
    pub domain: LinkDomain,
    /// Seconds per latency step.
    pub latency_s: f64,
    /// Bus bandwidth, bytes/s.
    pub busbw_bytes_per_s: f64,
    /// Samples used.
    pub points: u32,
    /// Largest |predicted − measured| / measured over the samples.
    pub max_relative_error: f64,
}

/// Fitted GEMM efficiency curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmFit {
    /// The curve.
    pub efficiency: GemmEfficiency,
    /// Peak the efficiencies are relative to, FLOP/s.
    pub peak_flops_per_s: f64,
    /// Samples used.
    pub points: u32,
    /// Largest relative error of the fitted efficiency.
    pub max_relative_error: f64,
}

/// Everything a calibration fitted; serde, numbers only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationSummary {
    /// [`CALIBRATION_VERSION`].
    pub version: u32,
    /// Fitted links.
    pub links: Vec<FittedLink>,
    /// Fitted GEMM curve, if GEMMs were measured.
    pub gemm: Option<GemmFit>,
}

impl CalibrationSummary {
    /// Checks a summary from outside (a file, a share link): version, and every
    /// number finite and in range. The error names the field.
    pub fn check(&self) -> Result<(), String> {
        use crate::base::bounds;
        if self.version != CALIBRATION_VERSION {
            return Err(format!(
                "version: {} is not {CALIBRATION_VERSION}",
                self.version
            ));
        }
        let at = |field: String, v: f64, b: bounds::Bounds| {
            b.check(v).map_err(|m| format!("{field}: {m}"))
        };
        for (i, l) in self.links.iter().enumerate() {
            at(
                format!("links[{i}].busbw_bytes_per_s"),
                l.busbw_bytes_per_s,
                bounds::LINK_BYTES_PER_S,
            )?;
            at(
                format!("links[{i}].latency_s"),
                l.latency_s,
                bounds::FITTED_LATENCY_S,
            )?;
            at(
                format!("links[{i}].max_relative_error"),
                l.max_relative_error,
                bounds::RELATIVE_ERROR,
            )?;
        }
        if let Some(g) = &self.gemm {
            let e = g.efficiency;
            at(
                "gemm.efficiency.max_fraction".into(),
                e.max_fraction,
                bounds::FRACTION,
            )?;
            at(
                "gemm.efficiency.half_dim".into(),
                e.half_dim,
                bounds::GEMM_HALF_DIM,
            )?;
            at(
                "gemm.max_relative_error".into(),
                g.max_relative_error,
                bounds::RELATIVE_ERROR,
            )?;
            at(
                "gemm.peak_flops_per_s".into(),
                g.peak_flops_per_s,
                bounds::FLOPS_PER_S,
            )?;
        }
        Ok(())
    }
}

impl CalibrationSummary {
    /// A short text form for a share link's `cal=` parameter: `;`-separated
    /// `op.i:α:busbw` / `op.e:α:busbw` entries (intra/inter node, seconds and
    /// bytes/s, then the fit's points and largest relative error) and
    /// `gemm:max:half_dim:peak:points:error`. Floats use Rust's shortest round-trip form.
    pub fn to_compact(&self) -> String {
        let mut parts: Vec<String> = self
            .links
            .iter()
            .map(|l| {
                let d = match l.domain {
                    LinkDomain::IntraNode => "i",
                    LinkDomain::InterNode => "e",
                };
                format!(
                    "{}.{d}:{}:{}:{}:{}",
                    l.op.id(),
                    l.latency_s,
                    l.busbw_bytes_per_s,
                    l.points,
                    l.max_relative_error
                )
            })
            .collect();
        if let Some(g) = &self.gemm {
            parts.push(format!(
                "gemm:{}:{}:{}:{}:{}",
                g.efficiency.max_fraction,
                g.efficiency.half_dim,
                g.peak_flops_per_s,
                g.points,
                g.max_relative_error
            ));
        }
        parts.join(";")
    }

    /// Parses [`CalibrationSummary::to_compact`]; the error names the entry.
    pub fn from_compact(text: &str) -> Result<Self, String> {
        if text.len() > 4096 {
            return Err("cal: longer than 4096 characters".to_string());
        }
        let mut out = CalibrationSummary {
            version: CALIBRATION_VERSION,
            links: Vec::new(),
            gemm: None,
        };
        for (i, entry) in text.split(';').filter(|e| !e.is_empty()).enumerate() {
            let fields: Vec<&str> = entry.split(':').collect();
            let num = |k: usize| -> Result<f64, String> {
                fields
                    .get(k)
                    .and_then(|f| f.parse::<f64>().ok())
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("cal[{i}] `{entry}`: field {k} is not a finite number"))
            };
            if !(3..=6).contains(&fields.len()) {
                return Err(format!(
                    "cal[{i}] `{entry}`: expected op.link:latency:busbw[:points:error] or gemm:max:half_dim:peak[:points:error]"
                ));
            }
            // Optional fit statistics after the fitted numbers (absent in older links).
            let stats = |at: usize| -> Result<(u32, f64), String> {
                if fields.len() == at {
                    return Ok((0, 0.0));
                }
                if fields.len() != at + 2 {
                    return Err(format!("cal[{i}] `{entry}`: wrong number of fields"));
                }
                let points = fields[at]
                    .parse::<u32>()
                    .map_err(|_| format!("cal[{i}] `{entry}`: points is not a whole number"))?;
                Ok((points, num(at + 1)?))
            };
            if fields[0] == "gemm" {
                out.gemm = Some(GemmFit {
                    efficiency: GemmEfficiency {
                        max_fraction: num(1)?,
                        half_dim: num(2)?,
                    },
                    peak_flops_per_s: num(3)?,
                    points: stats(4)?.0,
                    max_relative_error: stats(4)?.1,
                });
                continue;
            }
            let (op, domain) = fields[0]
                .rsplit_once('.')
                .ok_or_else(|| format!("cal[{i}] `{entry}`: expected op.i or op.e"))?;
            let op = Collective::from_id(op)
                .ok_or_else(|| format!("cal[{i}] `{entry}`: unknown operation `{op}`"))?;
            let domain = match domain {
                "i" => LinkDomain::IntraNode,
                "e" => LinkDomain::InterNode,
                other => return Err(format!("cal[{i}] `{entry}`: link `{other}` is not i or e")),
            };
            let (points, max_relative_error) = stats(3)?;
            out.links.push(FittedLink {
                op,
                domain,
                latency_s: num(1)?,
                busbw_bytes_per_s: num(2)?,
                points,
                max_relative_error,
            });
        }
        out.check()?;
        Ok(out)
    }
}
