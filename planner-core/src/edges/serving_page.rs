//! The serving latency view's worker protocol: what the page asks the Web Worker
//! (`app-worker/`) for ([`ServingRequest`]: the scenario as its share link, the request
//! mix and the target, as plain lines) and what the worker answers ([`ServingReply`]: the concurrency
//! curve of the scenario's replica, and, when asked, the deployment search's Pareto
//! points and table rows). [`answer`] runs in the worker; the page only builds a request
//! ([`ServingRequest::to_text`]) and reads the worker's drawing of it ([`ViewReply`],
//! through `serde_json::Value`), so `serving_time`, `serving_search`, `serving_disagg` and
//! the charts' code stay out of the page's wasm. [`ServingReply::from_json`] reads the
//! numbers themselves the same way, for a page that wants them.

use serde::{Deserialize, Serialize};

use crate::edges::link;
use crate::search::deployment::{
    concurrency_curve, serve_search, Percentile, ServeRejectReason, ServeSearchSpace, ServeTarget,
};
pub use crate::search::deployment::{ConcurrencyPoint, TradeoffPoint};
use crate::serving::latency::ServingLoad;

/// Largest concurrency the page's curve plots.
pub const CURVE_MAX_CONCURRENCY: u32 = 512;
/// Deployment rows the page's table lists.
pub const TABLE_ROWS: usize = 10;
/// Separates the search markup's pieces: the first is the chart, summary and table with the
/// chart's points left out; each later one is a run of points for the element
/// [`POINTS_TESTID`] names, which the page adds one piece per animation frame (placed at
/// once, a search's few thousand points made one frame of over 60 ms, issue 16).
pub const MARKUP_PIECE: &str = "<!--meshplan-piece-->";
/// `data-testid` of the tradeoff chart's group that the later pieces go into.
pub const POINTS_TESTID: &str = "tradeoff-points";
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
    /// The request as text: `seq`, `prompt_tokens`, `output_tokens`, `ttft_target_s`,
    /// `tpot_target_s`, `search` (1 or 0) and `query`, one a line (the link's query is
    /// percent-encoded, so it holds no line break, and it is last). Plain lines keep a JSON
    /// writer out of the page's wasm.
    pub fn to_text(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}\n{}",
            self.seq,
            self.prompt_tokens,
            self.output_tokens,
            self.ttft_target_s,
            self.tpot_target_s,
            u8::from(self.search),
            self.query
        )
    }

    /// Reads [`to_text`](Self::to_text)'s lines; an error names the field.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let mut lines = text.splitn(7, '\n');
        let mut next = |name: &str| {
            lines
                .next()
                .ok_or_else(|| format!("the serving request has no `{name}`"))
        };
        fn parse<T: std::str::FromStr>(v: &str, name: &str) -> Result<T, String> {
            v.trim().parse().map_err(|_| {
                format!(
                    "`{name}` is not valid: {:?}",
                    crate::base::free_text::one_line(v)
                )
            })
        }
        let seq = parse(next("seq")?, "seq")?;
        let prompt_tokens = parse(next("prompt_tokens")?, "prompt_tokens")?;
        let output_tokens = parse(next("output_tokens")?, "output_tokens")?;
        let ttft_target_s = parse(next("ttft_target_s")?, "ttft_target_s")?;
        let tpot_target_s = parse(next("tpot_target_s")?, "tpot_target_s")?;
        let search = match next("search")? {
            "1" => true,
            "0" => false,
            _ => return Err("`search` is not 0 or 1".into()),
        };
        let query = next("query")?.to_string();
        Ok(ServingRequest {
            seq,
            query,
            prompt_tokens,
            output_tokens,
            ttft_target_s,
            tpot_target_s,
            search,
        })
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
    /// The request's TPOT bound, s (the tradeoff chart's axis ends at twice it).
    pub tpot_target_s: f64,
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
pub fn search_scenario(s: &crate::input::scenario::Scenario) -> crate::input::scenario::Scenario {
    let mut sc = s.clone();
    sc.serving.tp = 1;
    sc.serving.pp = 1;
    sc.serving.target_concurrency = 1;
    sc
}

/// What the serving view reads of a scenario: the scenario with its training batch and
/// layout reset to their defaults. Neither the concurrency curve nor the deployment search
/// reads them (the serving code reads the model, precision, cluster, calibration, overheads
/// and serving inputs; of the step model, only its link, HBM and peak figures), so the page
/// keys its requests on this and a training edit asks the worker nothing
/// (`tests/it/serving_page.rs` checks equal answers).
pub fn view_inputs(s: &crate::input::scenario::Scenario) -> crate::input::scenario::Scenario {
    let mut sc = s.clone();
    sc.training = crate::resolve::presets::default_scenario().training;
    sc.layout = crate::input::layout::Layout::default();
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

/// Answers `request` ([`ServingRequest::to_text`]); `now_ms` is the worker's clock.
pub fn answer(request: &str, now_ms: &dyn Fn() -> f64) -> ServingReply {
    let req = match ServingRequest::from_text(request) {
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
        tpot_target_s: req.tpot_target_s,
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
        use crate::base::json_value::{count, field, flag, list, maybe_string, number, string};
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
            tpot_target_s: number(p, "tpot_target_s")?,
            curve: list(p, "curve", |c| {
                Ok(ConcurrencyPoint {
                    concurrency: count(c, "concurrency")?,
                    ttft_s: number(c, "ttft_s")?,
                    ttft_mean_s: number(c, "ttft_mean_s")?,
                    tpot_s: number(c, "tpot_s")?,
                    throughput_per_gpu: number(c, "throughput_per_gpu")?,
                    fits_kv: flag(c, "fits_kv")?,
                    running: count(c, "running")?,
                    slot_wait_s: number(c, "slot_wait_s")?,
                })
            })?,
            curve_error: maybe_string(p, "curve_error")?,
            curve_ms: number(p, "curve_ms")?,
            search,
            search_error: maybe_string(p, "search_error")?,
        }))
    }
}

/// What the worker drew from one [`ServingPage`] (`app-worker`'s markup, HTML-escaped there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageView {
    /// The request's number.
    pub seq: u64,
    /// The figures at the scenario's concurrency and the latency chart (or the error).
    pub curve_html: String,
    /// The tradeoff chart, summary and deployment table, when the search ran (or its
    /// error); `None` keeps the page's last one.
    pub search_html: Option<String>,
    /// Milliseconds the worker spent on the curve, and on the search when it ran.
    pub curve_ms: f64,
    /// See `curve_ms`.
    pub search_ms: Option<f64>,
}

/// A message from the serving worker to the page as the page reads it (record text,
/// [`ViewReply::to_text`]; its JSON form is kept for tests and tools).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ViewReply {
    /// The worker is loaded and listening.
    Ready,
    /// The answer to a request.
    View(PageView),
    /// The request did not parse.
    Failed(String),
}

impl ViewReply {
    /// The reply as the worker posts it: one record ([`crate::base::record_text`]), which
    /// the page reads with [`ViewReply::from_text`] and no JSON parser.
    pub fn to_text(&self) -> String {
        use crate::base::record_text::{maybe_field, record};
        match self {
            ViewReply::Ready => "Ready".to_string(),
            ViewReply::Failed(e) => record(&["Failed".into(), e.clone()]),
            ViewReply::View(v) => record(&[
                "View".into(),
                v.seq.to_string(),
                v.curve_html.clone(),
                if v.search_html.is_some() { "1" } else { "0" }.into(),
                v.search_html.clone().unwrap_or_default(),
                v.curve_ms.to_string(),
                maybe_field(v.search_ms),
            ]),
        }
    }

    /// Reads what [`ViewReply::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, String> {
        use crate::base::record_text::{count, maybe_number, number, split, text as field};
        let records = split(text);
        let [f] = records.as_slice() else {
            return Err("a serving reply is one record".to_string());
        };
        match f.first().map(String::as_str) {
            Some("Ready") if f.len() == 1 => Ok(ViewReply::Ready),
            Some("Failed") if f.len() == 2 => Ok(ViewReply::Failed(field(f, 1, "Failed")?)),
            Some("View") if f.len() == 7 => Ok(ViewReply::View(PageView {
                seq: count(f, 1, "seq")?,
                curve_html: field(f, 2, "curve_html")?,
                search_html: match f[3].as_str() {
                    "1" => Some(field(f, 4, "search_html")?),
                    "0" => None,
                    other => return Err(format!("`search_html` flag `{other}`")),
                },
                curve_ms: number(f, 5, "curve_ms")?,
                search_ms: maybe_number(f, 6, "search_ms")?,
            })),
            _ => Err("not a serving reply".to_string()),
        }
    }

    /// Reads a reply from its JSON text; equal to `serde_json::from_str::<ViewReply>` (the
    /// tests check it), read through `serde_json::Value` as [`ServingReply::from_json`].
    pub fn from_json(text: &str) -> Result<Self, String> {
        use crate::base::json_value::{field, maybe, maybe_string, number, string};
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v.as_str() == Some("Ready") {
            return Ok(ViewReply::Ready);
        }
        if let Some(e) = v.get("Failed") {
            return e
                .as_str()
                .map(|e| ViewReply::Failed(e.to_string()))
                .ok_or_else(|| "`Failed` is not a string".to_string());
        }
        let p = field(&v, "View")?;
        Ok(ViewReply::View(PageView {
            seq: field(p, "seq")?
                .as_u64()
                .ok_or_else(|| "`seq` is not a count".to_string())?,
            curve_html: string(p, "curve_html")?,
            search_html: maybe_string(p, "search_html")?,
            curve_ms: number(p, "curve_ms")?,
            search_ms: maybe(p, "search_ms")?,
        }))
    }
}
