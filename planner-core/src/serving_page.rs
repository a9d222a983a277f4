//! The serving latency view's worker protocol: what the page asks the Web Worker
//! (`app-worker/`) for ([`ServingRequest`]: the scenario as its share link, the request
//! mix and the target) and what the worker answers ([`ServingReply`]: the concurrency
//! curve of the scenario's replica, and, when asked, the deployment search's Pareto
//! points and table rows). [`answer`] runs in the worker; the page only builds a request
//! ([`ServingRequest::to_json`]) and reads a reply ([`ServingReply::from_json`], through
//! `serde_json::Value`), so `serving_time`, `serving_search` and `serving_disagg` stay out
//! of the page's wasm.

use serde::{Deserialize, Serialize};

use crate::link;
use crate::serving_search::{
    concurrency_curve, serve_search, Percentile, ServeRejectReason, ServeSearchSpace, ServeTarget,
};
pub use crate::serving_search::{ConcurrencyPoint, TradeoffPoint};
use crate::serving_time::ServingLoad;

/// Largest concurrency the page's curve plots.
pub const CURVE_MAX_CONCURRENCY: u32 = 512;
/// Deployment rows the page's table lists.
pub const TABLE_ROWS: usize = 10;
/// The percentile of TTFT the page plots and targets.
pub const PERCENTILE: Percentile = Percentile::P99;

/// The request mix's prompt and output tokens the page starts from
/// (`serving_time::ServingLoad::default()`).
pub fn default_tokens() -> (u32, u32) {
    let l = ServingLoad::default();
    (l.prompt_tokens, l.output_tokens)
}

/// What the page asks the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingRequest {
    /// The page's request number; the reply carries it back.
    pub seq: u64,
    /// The scenario as its share link's query ([`link::encode`]); the worker decodes and
    /// validates it ([`link::decode`]).
    pub query: String,
    /// Prompt tokens per request.
    pub prompt_tokens: u32,
    /// Output tokens per request.
    pub output_tokens: u32,
    /// Bound on TTFT at [`PERCENTILE`], s.
    pub ttft_target_s: f64,
    /// Bound on mean TPOT, s.
    pub tpot_target_s: f64,
    /// Whether to run the deployment search too (the page asks only when its inputs
    /// changed: the search does not depend on the replica shape or concurrency).
    pub search: bool,
}

impl ServingRequest {
    /// The request as JSON text, built through `serde_json::Value` (the page links it).
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "seq": self.seq,
            "query": self.query,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "ttft_target_s": self.ttft_target_s,
            "tpot_target_s": self.tpot_target_s,
            "search": self.search,
        })
        .to_string()
    }
}

/// One row of the page's deployment table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeploymentRow {
    /// Deployment label (`serving_search::Deployment::label`).
    pub label: String,
    /// Tensor parallel of the (decode) replica, what applying the row sets.
    pub tp: u32,
    /// Pipeline stages of the (decode) replica.
    pub pp: u32,
    /// Concurrency per (decode) replica.
    pub concurrency: u32,
    /// TTFT at [`PERCENTILE`], s.
    pub ttft_s: f64,
    /// TPOT, s.
    pub tpot_s: f64,
    /// Output tokens/s per GPU.
    pub throughput_per_gpu: f64,
}

/// The deployment search, condensed for the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchPage {
    /// GPUs available.
    pub gpus: u64,
    /// Deployments considered.
    pub candidates: u64,
    /// Deployments meeting the target.
    pub feasible_count: u64,
    /// Rejections by reason, for a person ("message: count").
    pub rejections: Vec<String>,
    /// Every (deployment, concurrency) point with its Pareto flag.
    pub points: Vec<TradeoffPoint>,
    /// Best deployments, most output tokens/s per GPU first.
    pub rows: Vec<DeploymentRow>,
    /// Milliseconds the worker spent searching.
    pub worker_ms: f64,
}

/// The worker's answer to one [`ServingRequest`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingPage {
    /// The request's number.
    pub seq: u64,
    /// The scenario's target concurrency (the curve's marker).
    pub concurrency: u32,
    /// The scenario's replica along the concurrency ladder (empty on an error).
    pub curve: Vec<ConcurrencyPoint>,
    /// Why there is no curve.
    pub curve_error: Option<String>,
    /// Milliseconds the worker spent on the curve.
    pub curve_ms: f64,
    /// The search, when asked and it ran.
    pub search: Option<SearchPage>,
    /// Why the search asked for did not run.
    pub search_error: Option<String>,
}

/// A message from the serving worker to the page (JSON text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ServingReply {
    /// The worker is loaded and listening.
    Ready,
    /// The answer to a request.
    Page(ServingPage),
    /// The request did not parse.
    Failed(String),
}

/// The search's scenario: the scenario's own replica shape and concurrency do not change
/// the search, so they are fixed (a row applied to the scenario does not change it).
pub fn search_scenario(s: &crate::scenario::Scenario) -> crate::scenario::Scenario {
    let mut sc = s.clone();
    sc.serving.tp = 1;
    sc.serving.pp = 1;
    sc.serving.target_concurrency = 1;
    sc
}

/// The page's search target (TTFT at [`PERCENTILE`] and mean TPOT bounds, s) and space
/// (the default space, [`TABLE_ROWS`] ranked, no rejected list).
pub fn search_inputs(ttft_target_s: f64, tpot_target_s: f64) -> (ServeTarget, ServeSearchSpace) {
    let target = ServeTarget {
        ttft_s: Some(ttft_target_s),
        tpot_s: Some(tpot_target_s),
        percentile: PERCENTILE,
    };
    let space = ServeSearchSpace {
        top: TABLE_ROWS,
        max_rejected: 0,
        ..ServeSearchSpace::default()
    };
    (target, space)
}

/// Answers `request` (JSON text of a [`ServingRequest`]); `now_ms` is the worker's clock.
pub fn answer(request: &str, now_ms: &dyn Fn() -> f64) -> ServingReply {
    let req: ServingRequest = match serde_json::from_str(request) {
        Ok(r) => r,
        Err(e) => return ServingReply::Failed(format!("the serving request: {e}")),
    };
    let scenario = match link::decode(&req.query) {
        Ok(s) => s,
        Err(errs) => {
            let msg = errs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return ServingReply::Failed(msg);
        }
    };
    let concurrency = scenario.serving.target_concurrency;
    let load = |c: u32| ServingLoad {
        prompt_tokens: req.prompt_tokens,
        output_tokens: req.output_tokens,
        concurrency: c,
        ..ServingLoad::default()
    };
    let model = scenario.model_spec().map_err(|e| e.to_string());
    let t0 = now_ms();
    let (curve, curve_error) = match model.as_ref().map_err(Clone::clone).and_then(|m| {
        concurrency_curve(
            m,
            &scenario,
            &load(concurrency),
            PERCENTILE,
            CURVE_MAX_CONCURRENCY,
        )
        .map_err(|e| e.to_string())
    }) {
        Ok(c) => (c, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let curve_ms = now_ms() - t0;
    let (search, search_error) = if req.search {
        let t0 = now_ms();
        let (target, space) = search_inputs(req.ttft_target_s, req.tpot_target_s);
        let sc = search_scenario(&scenario);
        match model.as_ref().map_err(Clone::clone).and_then(|m| {
            serve_search(m, &sc, &load(1), &target, &space).map_err(|e| e.to_string())
        }) {
            Ok(r) => {
                let rejections = r
                    .rejections
                    .iter()
                    .map(|c| {
                        let msg = ServeRejectReason::ALL
                            .iter()
                            .find(|x| x.key() == c.reason)
                            .map_or(c.reason.as_str(), |x| x.message());
                        format!("{msg}: {}", c.candidates)
                    })
                    .collect();
                let rows = r
                    .ranked
                    .iter()
                    .map(|d| {
                        let (tp, pp) = d.deployment.serving_shape();
                        DeploymentRow {
                            label: d.label.clone(),
                            tp,
                            pp,
                            concurrency: d.deployment.concurrency,
                            ttft_s: d.ttft_s,
                            tpot_s: d.tpot_s,
                            throughput_per_gpu: d.throughput_per_gpu,
                        }
                    })
                    .collect();
                let page = SearchPage {
                    gpus: r.gpus,
                    candidates: r.candidates,
                    feasible_count: r.feasible_count,
                    rejections,
                    points: r.points,
                    rows,
                    worker_ms: now_ms() - t0,
                };
                (Some(page), None)
            }
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    ServingReply::Page(ServingPage {
        seq: req.seq,
        concurrency,
        curve,
        curve_error,
        curve_ms,
        search,
        search_error,
    })
}

impl ServingReply {
    /// Reads a reply from its JSON text (what `serde_json::to_string` wrote).
    ///
    /// Equal to `serde_json::from_str::<ServingReply>` (the tests check it), but read
    /// through `serde_json::Value`, which the page links anyway, so the page does not carry
    /// the derived visitors.
    pub fn from_json(text: &str) -> Result<Self, String> {
        use crate::json_value::{count, field, flag, list, maybe_string, number, string};
        use serde_json::Value;
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v.as_str() == Some("Ready") {
            return Ok(ServingReply::Ready);
        }
        if let Some(e) = v.get("Failed") {
            return e
                .as_str()
                .map(|e| ServingReply::Failed(e.to_string()))
                .ok_or_else(|| "`Failed` is not a string".to_string());
        }
        let p = field(&v, "Page")?;
        let search = match field(p, "search")? {
            Value::Null => None,
            s => Some(SearchPage {
                gpus: count(s, "gpus")?,
                candidates: count(s, "candidates")?,
                feasible_count: count(s, "feasible_count")?,
                rejections: list(s, "rejections", |r| {
                    r.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| "a rejection is not a string".to_string())
                })?,
                points: list(s, "points", |t| {
                    Ok(TradeoffPoint {
                        label: string(t, "label")?,
                        aggregated: flag(t, "aggregated")?,
                        concurrency: count(t, "concurrency")?,
                        tpot_s: number(t, "tpot_s")?,
                        ttft_s: number(t, "ttft_s")?,
                        throughput_per_gpu: number(t, "throughput_per_gpu")?,
                        pareto: flag(t, "pareto")?,
                    })
                })?,
                rows: list(s, "rows", |r| {
                    Ok(DeploymentRow {
                        label: string(r, "label")?,
                        tp: count(r, "tp")?,
                        pp: count(r, "pp")?,
                        concurrency: count(r, "concurrency")?,
                        ttft_s: number(r, "ttft_s")?,
                        tpot_s: number(r, "tpot_s")?,
                        throughput_per_gpu: number(r, "throughput_per_gpu")?,
                    })
                })?,
                worker_ms: number(s, "worker_ms")?,
            }),
        };
        Ok(ServingReply::Page(ServingPage {
            seq: count(p, "seq")?,
            concurrency: count(p, "concurrency")?,
            curve: list(p, "curve", |c| {
                Ok(ConcurrencyPoint {
                    concurrency: count(c, "concurrency")?,
                    ttft_s: number(c, "ttft_s")?,
                    ttft_mean_s: number(c, "ttft_mean_s")?,
                    tpot_s: number(c, "tpot_s")?,
                    throughput_per_gpu: number(c, "throughput_per_gpu")?,
                    fits_kv: flag(c, "fits_kv")?,
                })
            })?,
            curve_error: maybe_string(p, "curve_error")?,
            curve_ms: number(p, "curve_ms")?,
            search,
            search_error: maybe_string(p, "search_error")?,
        }))
    }
}
