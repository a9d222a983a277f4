//! The run's bill section's worker protocol: the page asks the Web Worker (`app-worker/`) for
//! one of the bill's searches ([`BillRequest`]: which one, and the scenario as its share link,
//! plain lines), and the worker answers with progress and then the answer drawn as markup
//! ([`BillReply`], record text), so the mesh search, the deployment search and the inverse
//! questions never run on the page's thread and their code stays out of the page's wasm.
//!
//! The three searches ([`BillJob`]): the rankings' leaders by time, dollars and energy
//! ([`crate::view::bill::rank_leaders`]), the smallest cluster that meets the bill's deadline
//! ([`crate::view::bill::deadline_view`]) and the fewest GPUs that hold its request rate
//! ([`crate::view::bill::fleet_view`]). [`answer`] runs them; the worker draws the result.

use crate::base::record_text::{self, record, split};
use crate::edges::link;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::view::bill::{
    deadline_view, fleet_view, rank_leaders_with_progress, DeadlineView, FleetAnswer, RankLeader,
};

/// The first line of a [`BillRequest`]: tells the worker's other requests apart.
pub const REQUEST_TAG: &str = "bill";

/// One of the bill section's searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BillJob {
    /// The leaders by time, dollars and energy of the scenario's cluster.
    Rankings,
    /// The smallest cluster that meets the deadline (and budget).
    Deadline,
    /// The fewest GPUs of each allowed type that hold the request rate.
    Fleet,
}

impl BillJob {
    /// Every job.
    pub const ALL: [BillJob; 3] = [BillJob::Rankings, BillJob::Deadline, BillJob::Fleet];

    /// Stable identifier (request, reply, `data-testid`s).
    pub fn id(self) -> &'static str {
        match self {
            BillJob::Rankings => "rankings",
            BillJob::Deadline => "deadline",
            BillJob::Fleet => "fleet",
        }
    }

    /// Parses [`BillJob::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|j| j.id() == id)
    }
}

/// What the page asks the worker.
#[derive(Clone, Debug, PartialEq)]
pub struct BillRequest {
    /// Which search.
    pub job: BillJob,
    /// The page's request number; every reply carries it back.
    pub seq: u64,
    /// The scenario as its share link's query ([`link::encode`]).
    pub query: String,
}

impl BillRequest {
    /// [`REQUEST_TAG`], the job, `seq` and `query`, one a line (the query is
    /// percent-encoded, so it holds no line break).
    pub fn to_text(&self) -> String {
        format!(
            "{REQUEST_TAG}\n{}\n{}\n{}",
            self.job.id(),
            self.seq,
            self.query
        )
    }

    /// Reads [`BillRequest::to_text`]; `None` when `text` is not a bill request at all.
    pub fn from_text(text: &str) -> Option<Result<Self, String>> {
        let mut lines = text.splitn(4, '\n');
        if lines.next() != Some(REQUEST_TAG) {
            return None;
        }
        let Some(job) = lines.next().and_then(BillJob::from_id) else {
            return Some(Err(
                "the bill request's `job` is not rankings, deadline or fleet".into(),
            ));
        };
        let seq = match lines.next().map(str::trim).map(str::parse::<u64>) {
            Some(Ok(s)) => s,
            _ => return Some(Err("the bill request's `seq` is not a count".into())),
        };
        let Some(query) = lines.next() else {
            return Some(Err("the bill request has no `query`".into()));
        };
        Some(Ok(BillRequest {
            job,
            seq,
            query: query.to_string(),
        }))
    }
}

/// A search's answer, before the worker draws it.
#[derive(Clone, Debug, PartialEq)]
pub enum BillAnswer {
    /// The leaders by time, dollars and energy (empty: nothing fits, or no board power).
    Rankings(Vec<RankLeader>),
    /// The deadline question's sizes.
    Deadline(DeadlineView),
    /// The fleet question's GPU types.
    Fleet(FleetAnswer),
}

/// The scenario of a link query, decoded, resolved and validated, with its model; the error
/// names the field (the workers' requests carry scenarios as links).
pub fn scenario_of_query(query: &str) -> Result<(Scenario, ModelSpec), String> {
    let first = |errs: Vec<crate::resolve::validate::FieldError>| {
        errs.first()
            .map(|e| format!("{}: {}", e.field, e.message))
            .unwrap_or_default()
    };
    let scenario = link::decode(query).map_err(first)?;
    let model = scenario.model_spec().map_err(|e| e.to_string())?;
    scenario.validate().map_err(first)?;
    Ok((scenario, model))
}

/// Runs `request`'s search; `progress(done, all)` as it goes (blocks of the rankings' mesh
/// search, sizes of the deadline question; the fleet question reports its GPU types).
pub fn answer(
    request: &BillRequest,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BillAnswer, String> {
    let (scenario, model) = scenario_of_query(&request.query)?;
    Ok(match request.job {
        BillJob::Rankings => {
            BillAnswer::Rankings(rank_leaders_with_progress(&scenario, &model, progress))
        }
        BillJob::Deadline => BillAnswer::Deadline(deadline_view(&scenario, &model, progress)),
        BillJob::Fleet => BillAnswer::Fleet(fleet_view(&scenario, &model)),
    })
}

/// A message from the worker to the bill section.
#[derive(Clone, Debug, PartialEq)]
pub enum BillReply {
    /// `done` of `all` steps searched.
    Progress {
        /// Which search.
        job: BillJob,
        /// The request's number.
        seq: u64,
        /// Steps done.
        done: usize,
        /// Steps in all.
        all: usize,
    },
    /// The answer, drawn.
    Done {
        /// Which search.
        job: BillJob,
        /// The request's number.
        seq: u64,
        /// Milliseconds the worker spent (its clock).
        worker_ms: f64,
        /// The answer as HTML, every text from the model escaped.
        html: String,
    },
    /// No answer: the scenario did not decode, validate or resolve.
    Failed {
        /// Which search.
        job: BillJob,
        /// The request's number.
        seq: u64,
        /// Why, naming the field.
        message: String,
    },
}

impl BillReply {
    /// One record: a tag, the job, `seq`, then the variant's fields.
    pub fn to_text(&self) -> String {
        match self {
            BillReply::Progress {
                job,
                seq,
                done,
                all,
            } => record(&[
                "bill-progress".into(),
                job.id().into(),
                seq.to_string(),
                done.to_string(),
                all.to_string(),
            ]),
            BillReply::Done {
                job,
                seq,
                worker_ms,
                html,
            } => record(&[
                "bill-done".into(),
                job.id().into(),
                seq.to_string(),
                worker_ms.to_string(),
                html.clone(),
            ]),
            BillReply::Failed { job, seq, message } => record(&[
                "bill-failed".into(),
                job.id().into(),
                seq.to_string(),
                message.clone(),
            ]),
        }
    }

    /// Reads [`BillReply::to_text`]; `None` when `text` is not a bill reply.
    pub fn from_text(text: &str) -> Option<Result<Self, String>> {
        if !text.starts_with("bill-") {
            return None;
        }
        let records = split(text);
        let f = records.first()?;
        Some(read_reply(f))
    }
}

fn read_reply(f: &[String]) -> Result<BillReply, String> {
    let job = f
        .get(1)
        .and_then(|j| BillJob::from_id(j))
        .ok_or("the bill reply's `job` is not a job")?;
    let seq = record_text::count(f, 2, "seq")?;
    match f.first().map(String::as_str) {
        Some("bill-progress") => Ok(BillReply::Progress {
            job,
            seq,
            done: record_text::count(f, 3, "done")?,
            all: record_text::count(f, 4, "all")?,
        }),
        Some("bill-done") => Ok(BillReply::Done {
            job,
            seq,
            worker_ms: record_text::number(f, 3, "worker_ms")?,
            html: record_text::text(f, 4, "html")?,
        }),
        Some("bill-failed") => Ok(BillReply::Failed {
            job,
            seq,
            message: record_text::text(f, 3, "message")?,
        }),
        _ => Err("the bill reply's tag is not known".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_read_back() {
        let r = BillRequest {
            job: BillJob::Deadline,
            seq: 7,
            query: "v=1&model=llama-3.1-70b&bill_days=20".into(),
        };
        assert_eq!(BillRequest::from_text(&r.to_text()), Some(Ok(r)));
        assert_eq!(BillRequest::from_text("mesh\n1\nq"), None);
        assert!(matches!(
            BillRequest::from_text("bill\nnope\n1\nq"),
            Some(Err(_))
        ));
        // Markup with the record separators in it survives the escaping.
        let done = BillReply::Done {
            job: BillJob::Fleet,
            seq: 3,
            worker_ms: 12.5,
            html: "<p>a\u{1f}b\u{1e}c</p>".into(),
        };
        assert_eq!(BillReply::from_text(&done.to_text()), Some(Ok(done)));
        let p = BillReply::Progress {
            job: BillJob::Rankings,
            seq: 1,
            done: 8,
            all: 90,
        };
        assert_eq!(BillReply::from_text(&p.to_text()), Some(Ok(p)));
        assert_eq!(BillReply::from_text("mesh-done"), None);
    }

    #[test]
    fn a_bad_link_fails_naming_its_field() {
        let r = BillRequest {
            job: BillJob::Fleet,
            seq: 1,
            query: "v=1&model=llama-3.1-70b&fleet_rps=-3".into(),
        };
        let e = answer(&r, &mut |_, _| {}).expect_err("refused");
        assert!(e.starts_with("fleet_rps"), "{e}");
    }
}
