//! The mesh explorer's worker protocol: the page asks the Web Worker (`app-worker/`) to
//! search a scenario's cluster ([`MeshRequest`]: the scenario as its share link, plain
//! lines) and the worker answers with progress and then the whole [`SearchResult`] as
//! record text ([`crate::base::record_text`]), so the search itself (`search::mesh`,
//! `search::memo` and what only they call) stays out of the page's wasm and never runs on
//! the page's thread (issue 16: one `SlicedSearch::step(1)` of the 16,384-GPU search
//! could outlast a frame).
//!
//! The page reads a reply a few records at a time ([`MeshReader::read`]), so even the
//! 16,384-GPU reply (thousands of records) is read within a frame's budget. The worker
//! posts a finished search as the UTF-8 bytes of its text in a transferred `ArrayBuffer`
//! ([`Read::from_bytes`]): posted as a string, the 1.37 MB reply was cloned and then
//! converted into the page's wasm memory in one task of 2.3–6.6 ms of the page's thread
//! (up to 15 ms under load, measured); as bytes it is one copy, and each record's UTF-8 is
//! checked as it is read. The head names how many records follow, so a reply cut short
//! even at a record's end is refused, not read as a smaller search.

use crate::base::record_text::{escape, unescape, FIELD, RECORD};
use crate::input::layout::{Recompute, Schedule, ZeroStage};
use crate::input::offload::Offload;
use crate::input::stage_split::SplitProposal;
use crate::search::mesh::{
    Feasible, Hint, Knobs, MeshDims, PricingCaveat, ReasonCount, Reasons, Rejected, SearchResult,
    SearchSpace, SearchStopped, SlicedSearch,
};
use crate::time::cost::{CostOptions, InputSource, StepModel};

/// The first line of a [`MeshRequest`]: tells the worker's other requests apart.
pub const REQUEST_TAG: &str = "mesh";
/// Feasible candidates the page's search keeps (the table filters and sorts these).
pub const KEPT_RESULTS: usize = 5000;
/// Rejected blocks the page's search keeps (the rejected table filters these).
pub const KEPT_REJECTED: usize = 20_000;
/// Rejected blocks the page lists at most (of those its degree filter keeps).
pub const REJECTED_ROWS: usize = 100;
/// (TP, PP, CP) blocks the worker searches between two progress messages.
const BLOCKS_PER_PROGRESS: usize = 8;

/// The page's search space: the default space, [`KEPT_RESULTS`] ranked and
/// [`KEPT_REJECTED`] rejected blocks kept (what the page searched on its own thread before).
pub fn page_space() -> SearchSpace {
    SearchSpace {
        max_results: KEPT_RESULTS,
        max_rejected: KEPT_REJECTED,
        ..SearchSpace::default()
    }
}

/// What the page asks the worker.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshRequest {
    /// The page's request number; every reply carries it back.
    pub seq: u64,
    /// The scenario as its share link's query ([`crate::edges::link::encode`]).
    pub query: String,
}

impl MeshRequest {
    /// [`REQUEST_TAG`], `seq` and `query`, one a line (the query is percent-encoded, so it
    /// holds no line break).
    pub fn to_text(&self) -> String {
        format!("{REQUEST_TAG}\n{}\n{}", self.seq, self.query)
    }

    /// Reads [`MeshRequest::to_text`]; `None` when `text` is not a mesh request at all.
    pub fn from_text(text: &str) -> Option<Result<Self, String>> {
        let mut lines = text.splitn(3, '\n');
        if lines.next() != Some(REQUEST_TAG) {
            return None;
        }
        let seq = match lines.next().map(str::trim).map(str::parse::<u64>) {
            Some(Ok(s)) => s,
            _ => return Some(Err("the mesh request's `seq` is not a count".into())),
        };
        let Some(query) = lines.next() else {
            return Some(Err("the mesh request has no `query`".into()));
        };
        Some(Ok(MeshRequest {
            seq,
            query: query.to_string(),
        }))
    }
}

/// A message from the worker to the mesh explorer.
#[derive(Clone, Debug, PartialEq)]
pub enum MeshReply {
    /// (TP, PP, CP) blocks searched of all, for request `seq`.
    Progress {
        /// The request's number.
        seq: u64,
        /// Blocks searched.
        done: usize,
        /// Blocks in all.
        all: usize,
    },
    /// No search: the scenario did not decode, validate or resolve.
    Failed {
        /// The request's number (0 when the request itself did not parse).
        seq: u64,
        /// Why, naming the field.
        message: String,
    },
    /// The search's result.
    Done(Box<MeshPage>),
}

/// A finished search as the worker sends it.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshPage {
    /// The request's number.
    pub seq: u64,
    /// Milliseconds the worker spent searching (its clock).
    pub worker_ms: f64,
    /// Blocks searched, and in all.
    pub blocks: (usize, usize),
    /// What the search found.
    pub result: SearchResult,
}

/// Searches `request`'s scenario ([`page_space`], the scenario's own calibration as
/// [`StepModel::for_scenario`] applies it, the same as the page did on its own thread);
/// `progress` gets a [`MeshReply::Progress`] every few blocks, and the return value is
/// the last message.
pub fn answer(
    request: &MeshRequest,
    now_ms: &dyn Fn() -> f64,
    progress: &mut dyn FnMut(MeshReply),
) -> MeshReply {
    let seq = request.seq;
    let failed = |message: String| MeshReply::Failed { seq, message };
    let (key, model) = match crate::edges::bill_page::scenario_of_query(&request.query) {
        Ok(pair) => pair,
        Err(message) => return failed(message),
    };
    let t0 = now_ms();
    let step_model = StepModel::for_scenario(&model, &key, CostOptions::default());
    let mut search = SlicedSearch::new(model, key, page_space(), step_model);
    while !search.step(BLOCKS_PER_PROGRESS) {
        let (done, all) = search.progress();
        progress(MeshReply::Progress { seq, done, all });
    }
    let blocks = search.progress();
    let mut result = search.finish();
    result.rejected = listed_rejections(std::mem::take(&mut result.rejected));
    MeshReply::Done(Box::new(MeshPage {
        seq,
        worker_ms: now_ms() - t0,
        blocks,
        result,
    }))
}

/// A reply being written: records of fields, straight into one string (a 16,384-GPU
/// search is thousands of records: a `String` per field took most of the writing time).
struct Writer(String);

impl Writer {
    /// Starts a record with its tag.
    fn record(&mut self, tag: &str) -> &mut Self {
        if !self.0.is_empty() {
            self.0.push(RECORD);
        }
        self.0.push_str(tag);
        self
    }

    /// A field that is a number or an identifier (no separator or backslash in it).
    fn num(&mut self, v: impl std::fmt::Display) -> &mut Self {
        use std::fmt::Write;
        self.0.push(FIELD);
        // Writing to a `String` does not fail.
        let _ = write!(self.0, "{v}");
        self
    }

    /// An optional number: empty when absent.
    fn opt(&mut self, v: Option<impl std::fmt::Display>) -> &mut Self {
        match v {
            Some(v) => self.num(v),
            None => self.num(""),
        }
    }

    /// A field of free text, escaped.
    fn text(&mut self, v: &str) -> &mut Self {
        self.0.push(FIELD);
        self.0.push_str(&escape(v));
        self
    }

    fn dims(&mut self, d: MeshDims) -> &mut Self {
        self.num(d.dp)
            .num(d.tp)
            .num(d.pp)
            .num(d.cp)
            .num(d.ep)
            .num(d.expert_tp)
    }

    fn split(&mut self, s: SplitProposal) -> &mut Self {
        match s {
            SplitProposal::Even => self.num("e"),
            SplitProposal::FirstLast { first, last } => self.num(format_args!("fl:{first}:{last}")),
            SplitProposal::AccountEmbeddingLoss => self.num("ae"),
        }
    }
}

impl MeshReply {
    /// The reply as the worker posts it: records of fields ([`crate::base::record_text`]);
    /// a finished search is a head record, then one record per rejection count, hint,
    /// time-model input, feasible candidate and rejected block, each led by its tag.
    pub fn to_text(&self) -> String {
        let mut w = Writer(String::new());
        match self {
            MeshReply::Progress { seq, done, all } => {
                w.record("MeshProgress").num(seq).num(done).num(all);
            }
            MeshReply::Failed { seq, message } => {
                w.record("MeshFailed").num(seq).text(message);
            }
            MeshReply::Done(p) => {
                let r = &p.result;
                let stop = r.stopped.as_ref();
                let records = r.rejections.len()
                    + r.rejections_without_offload.len()
                    + r.hints.len()
                    + r.inputs.len()
                    + r.feasible.len()
                    + r.rejected.len();
                w.record("MeshDone")
                    .num(p.seq)
                    .num(p.worker_ms)
                    .num(p.blocks.0)
                    .num(p.blocks.1)
                    .num(r.world)
                    .num(r.candidates)
                    .num(r.feasible_count)
                    .num(r.usable_bytes)
                    .num(r.offload.id())
                    .num(u8::from(stop.is_some()))
                    .opt(stop.map(|s| s.candidates))
                    .opt(stop.map(|s| s.evaluated))
                    .opt(stop.map(|s| s.max_evaluated))
                    .opt(stop.map(|s| s.blocks_searched))
                    .opt(stop.map(|s| s.blocks))
                    .text(stop.map_or("", |s| s.message.as_str()))
                    .num(records)
                    .num(r.feasible_meshes);
                for (tag, counts) in [("C", &r.rejections), ("W", &r.rejections_without_offload)] {
                    for c in counts {
                        w.record(tag).text(&c.reason).num(c.candidates);
                    }
                }
                for h in &r.hints {
                    w.record("H").text(&h.key).text(&h.text).opt(h.best_rank);
                }
                for i in &r.inputs {
                    w.record("I").text(&i.key).num(u8::from(i.measured));
                }
                for f in &r.feasible {
                    let k = f.knobs;
                    w.record("F")
                        .dims(f.dims)
                        .num(k.zero.number())
                        .num(k.recompute.id())
                        .num(k.schedule.id())
                        .num(k.virtual_stages)
                        .num(k.micro_batch)
                        .split(k.split)
                        .num(f.step_s)
                        .num(f.mfu)
                        .num(f.exposed_comm_s)
                        .num(f.bubble_s)
                        .num(f.peak_memory_bytes)
                        .num(f.headroom_bytes)
                        .num(f.caveat.map_or("", |c| c.key()));
                }
                for x in &r.rejected {
                    w.record("R")
                        .dims(x.dims)
                        .opt(x.zero.map(ZeroStage::number))
                        .num(x.recompute.map_or("", Recompute::id))
                        .num(x.schedule.map_or("", Schedule::id));
                    w.opt(x.virtual_stages).opt(x.micro_batch);
                    match x.split {
                        Some(s) => w.split(s),
                        None => w.num(""),
                    };
                    w.num(x.reasons.0)
                        .num(x.candidates)
                        .num(x.peak_memory_bytes);
                }
            }
        }
        w.0
    }

    /// Reads what [`MeshReply::to_text`] wrote, all at once (the page reads a finished
    /// search with [`MeshReader`], a few records a frame).
    pub fn from_text(text: String) -> Result<Self, String> {
        Self::from_bytes(text.into_bytes())
    }

    /// Reads the UTF-8 bytes of what [`MeshReply::to_text`] wrote, all at once.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, String> {
        match Read::from_bytes(bytes)? {
            Read::Reply(r) => Ok(r),
            Read::Records(mut reader) => {
                while !reader.read(usize::MAX)? {}
                Ok(MeshReply::Done(Box::new(reader.finish())))
            }
        }
    }
}

/// What [`Read::from_text`] found at the start of a reply.
#[derive(Debug)]
pub enum Read {
    /// A progress or failure message, read whole.
    Reply(MeshReply),
    /// A finished search: its records are read with [`MeshReader::read`].
    Records(Box<MeshReader>),
}

/// Reads a finished search's records a few at a time.
#[derive(Debug)]
pub struct MeshReader {
    /// The reply's UTF-8 bytes, checked a record at a time.
    bytes: Vec<u8>,
    /// Byte offset of the next record in `bytes`, `None` once every record is read.
    next: Option<usize>,
    /// Records the head says follow it, and how many of them are still to read.
    records: usize,
    left: usize,
    page: MeshPage,
}

/// The [`RECORD`] separator as a byte: ASCII, so it never occurs inside a multi-byte
/// UTF-8 character and the bytes split where the text would.
const RECORD_BYTE: u8 = RECORD as u8;

/// Where the record starting at `start` ends (the next separator, or the end).
fn record_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|b| *b == RECORD_BYTE)
        .map_or(bytes.len(), |i| start + i)
}

/// The record `bytes[start..end]` as text, or why not.
fn record_text(bytes: &[u8], start: usize, end: usize) -> Result<&str, String> {
    std::str::from_utf8(&bytes[start..end])
        .map_err(|e| format!("a mesh search reply's record at byte {start} is not UTF-8: {e}"))
}

/// The fields of one record, unescaped only where a field holds text.
struct Fields<'a> {
    raw: Vec<&'a str>,
    tag: &'a str,
}

impl<'a> Fields<'a> {
    fn new(record: &'a str) -> Self {
        let raw: Vec<&str> = record.split(FIELD).collect();
        let tag = raw.first().copied().unwrap_or("");
        Fields { raw, tag }
    }

    fn get(&self, i: usize, name: &str) -> Result<&'a str, String> {
        self.raw
            .get(i)
            .copied()
            .ok_or_else(|| format!("the `{}` record has no `{name}`", self.tag))
    }

    fn parse<T: std::str::FromStr>(&self, i: usize, name: &str) -> Result<T, String> {
        let f = self.get(i, name)?;
        f.parse()
            .map_err(|_| format!("`{name}` of a `{}` record: `{f}` is not valid", self.tag))
    }

    fn maybe<T: std::str::FromStr>(&self, i: usize, name: &str) -> Result<Option<T>, String> {
        if self.get(i, name)?.is_empty() {
            Ok(None)
        } else {
            self.parse(i, name).map(Some)
        }
    }

    fn text(&self, i: usize, name: &str) -> Result<String, String> {
        self.get(i, name).map(unescape)
    }

    fn choice<T>(
        &self,
        i: usize,
        name: &str,
        from: impl Fn(&str) -> Option<T>,
    ) -> Result<T, String> {
        let f = self.get(i, name)?;
        from(f).ok_or_else(|| format!("`{name}` of a `{}` record: `{f}` is not known", self.tag))
    }

    fn maybe_choice<T>(
        &self,
        i: usize,
        name: &str,
        from: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, String> {
        if self.get(i, name)?.is_empty() {
            Ok(None)
        } else {
            self.choice(i, name, from).map(Some)
        }
    }

    fn dims(&self) -> Result<MeshDims, String> {
        Ok(MeshDims {
            dp: self.parse(1, "dp")?,
            tp: self.parse(2, "tp")?,
            pp: self.parse(3, "pp")?,
            cp: self.parse(4, "cp")?,
            ep: self.parse(5, "ep")?,
            expert_tp: self.parse(6, "expert_tp")?,
        })
    }

    fn len_is(&self, n: usize) -> Result<(), String> {
        if self.raw.len() == n {
            Ok(())
        } else {
            Err(format!(
                "a `{}` record has {} fields, not {n}",
                self.tag,
                self.raw.len()
            ))
        }
    }
}

/// The rejected blocks the page can list: the first [`REJECTED_ROWS`] of each mesh, in
/// order. The page's degree filter keeps whole meshes (it reads only `dims`) and lists the
/// first [`REJECTED_ROWS`] it keeps, which are among these for every filter, so the table
/// is the same as from the whole list; the 16,384-GPU search's 20,000 kept blocks are
/// 9,352 of these (169 meshes), about half the reply to write, send and read.
pub fn listed_rejections(rejected: Vec<Rejected>) -> Vec<Rejected> {
    let mut per_mesh = std::collections::HashMap::<MeshDims, usize>::new();
    rejected
        .into_iter()
        .filter(|x| {
            let n = per_mesh.entry(x.dims).or_insert(0);
            *n += 1;
            *n <= REJECTED_ROWS
        })
        .collect()
}

fn zero_of(f: &str) -> Option<ZeroStage> {
    f.parse().ok().and_then(ZeroStage::from_number)
}

fn split_of(f: &str) -> Option<SplitProposal> {
    match f {
        "e" => Some(SplitProposal::Even),
        "ae" => Some(SplitProposal::AccountEmbeddingLoss),
        _ => {
            let mut parts = f.strip_prefix("fl:")?.split(':');
            let first = parts.next()?.parse().ok()?;
            let last = parts.next()?.parse().ok()?;
            parts
                .next()
                .is_none()
                .then_some(SplitProposal::FirstLast { first, last })
        }
    }
}

fn caveat_of(f: &str) -> Option<Option<PricingCaveat>> {
    if f.is_empty() {
        return Some(None);
    }
    let c = PricingCaveat::Zero3InterNodeGathers;
    (c.key() == f).then_some(Some(c))
}

impl Read {
    /// Reads a reply's first record: a whole progress or failure message, or the head of a
    /// finished search.
    pub fn from_text(text: String) -> Result<Read, String> {
        Self::from_bytes(text.into_bytes())
    }

    /// [`Read::from_text`] of the text's UTF-8 bytes (what the worker transfers); only the
    /// first record's bytes are checked here, each later one as [`MeshReader::read`] reads it.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Read, String> {
        let end = record_end(&bytes, 0);
        let f = Fields::new(record_text(&bytes, 0, end)?);
        let page = match f.tag {
            "MeshProgress" => {
                f.len_is(4)?;
                return Ok(Read::Reply(MeshReply::Progress {
                    seq: f.parse(1, "seq")?,
                    done: f.parse(2, "done")?,
                    all: f.parse(3, "all")?,
                }));
            }
            "MeshFailed" => {
                f.len_is(3)?;
                return Ok(Read::Reply(MeshReply::Failed {
                    seq: f.parse(1, "seq")?,
                    message: f.text(2, "message")?,
                }));
            }
            "MeshDone" => {
                f.len_is(19)?;
                let stopped = match f.get(10, "stopped")? {
                    "0" => None,
                    "1" => Some(SearchStopped {
                        candidates: f.parse(11, "stopped.candidates")?,
                        evaluated: f.parse(12, "stopped.evaluated")?,
                        max_evaluated: f.parse(13, "stopped.max_evaluated")?,
                        blocks_searched: f.parse(14, "stopped.blocks_searched")?,
                        blocks: f.parse(15, "stopped.blocks")?,
                        message: f.text(16, "stopped.message")?,
                    }),
                    other => return Err(format!("`stopped` flag `{other}` is not 0 or 1")),
                };
                let records: usize = f.parse(17, "records")?;
                let page = MeshPage {
                    seq: f.parse(1, "seq")?,
                    worker_ms: f.parse(2, "worker_ms")?,
                    blocks: (f.parse(3, "blocks_searched")?, f.parse(4, "blocks")?),
                    result: SearchResult {
                        world: f.parse(5, "world")?,
                        candidates: f.parse(6, "candidates")?,
                        feasible_count: f.parse(7, "feasible_count")?,
                        feasible_meshes: f.parse(18, "feasible_meshes")?,
                        feasible: Vec::new(),
                        rejected: Vec::new(),
                        rejections: Vec::new(),
                        usable_bytes: f.parse(8, "usable_bytes")?,
                        hints: Vec::new(),
                        inputs: Vec::new(),
                        stopped,
                        offload: f.choice(9, "offload", Offload::from_id)?,
                        rejections_without_offload: Vec::new(),
                    },
                };
                (page, records)
            }
            _ => return Err("not a mesh search reply".into()),
        };
        let (page, records) = page;
        let next = (end < bytes.len()).then_some(end + 1);
        Ok(Read::Records(Box::new(MeshReader {
            bytes,
            next,
            records,
            left: records,
            page,
        })))
    }
}

impl MeshReader {
    /// The request number of the search being read.
    pub fn seq(&self) -> u64 {
        self.page.seq
    }

    /// Reads up to `max_records` more records; `true` once every record is read. A reply
    /// with fewer or more records than its head says is refused.
    pub fn read(&mut self, max_records: usize) -> Result<bool, String> {
        for _ in 0..max_records {
            let Some(start) = self.next else {
                return if self.left == 0 {
                    Ok(true)
                } else {
                    Err(format!(
                        "the mesh search reply ends after {} of its {} records",
                        self.records - self.left,
                        self.records
                    ))
                };
            };
            if self.left == 0 {
                return Err(format!(
                    "the mesh search reply has more than the {} records its head says",
                    self.records
                ));
            }
            self.left -= 1;
            let end = record_end(&self.bytes, start);
            self.next = (end < self.bytes.len()).then_some(end + 1);
            let f = Fields::new(record_text(&self.bytes, start, end)?);
            let r = &mut self.page.result;
            match f.tag {
                "C" | "W" => {
                    f.len_is(3)?;
                    let c = ReasonCount {
                        reason: f.text(1, "reason")?,
                        candidates: f.parse(2, "candidates")?,
                    };
                    if f.tag == "C" {
                        r.rejections.push(c);
                    } else {
                        r.rejections_without_offload.push(c);
                    }
                }
                "H" => {
                    f.len_is(4)?;
                    r.hints.push(Hint {
                        key: f.text(1, "key")?,
                        text: f.text(2, "text")?,
                        best_rank: f.maybe(3, "best_rank")?,
                    });
                }
                "I" => {
                    f.len_is(3)?;
                    r.inputs.push(InputSource {
                        key: f.text(1, "key")?,
                        measured: f.choice(2, "measured", |m| match m {
                            "0" => Some(false),
                            "1" => Some(true),
                            _ => None,
                        })?,
                    });
                }
                "F" => {
                    f.len_is(20)?;
                    r.feasible.push(Feasible {
                        dims: f.dims()?,
                        knobs: Knobs {
                            zero: f.choice(7, "zero", zero_of)?,
                            recompute: f.choice(8, "recompute", Recompute::from_id)?,
                            schedule: f.choice(9, "schedule", Schedule::from_id)?,
                            virtual_stages: f.parse(10, "virtual_stages")?,
                            micro_batch: f.parse(11, "micro_batch")?,
                            split: f.choice(12, "split", split_of)?,
                        },
                        step_s: f.parse(13, "step_s")?,
                        mfu: f.parse(14, "mfu")?,
                        exposed_comm_s: f.parse(15, "exposed_comm_s")?,
                        bubble_s: f.parse(16, "bubble_s")?,
                        peak_memory_bytes: f.parse(17, "peak_memory_bytes")?,
                        headroom_bytes: f.parse(18, "headroom_bytes")?,
                        caveat: f.choice(19, "caveat", caveat_of)?,
                    });
                }
                "R" => {
                    f.len_is(16)?;
                    r.rejected.push(Rejected {
                        dims: f.dims()?,
                        zero: f.maybe_choice(7, "zero", zero_of)?,
                        recompute: f.maybe_choice(8, "recompute", Recompute::from_id)?,
                        schedule: f.maybe_choice(9, "schedule", Schedule::from_id)?,
                        virtual_stages: f.maybe(10, "virtual_stages")?,
                        micro_batch: f.maybe(11, "micro_batch")?,
                        split: f.maybe_choice(12, "split", split_of)?,
                        reasons: Reasons(f.parse(13, "reasons")?),
                        candidates: f.parse(14, "candidates")?,
                        peak_memory_bytes: f.parse(15, "peak_memory_bytes")?,
                    });
                }
                other => return Err(format!("a mesh search reply has a `{other}` record")),
            }
        }
        if self.next.is_none() && self.left > 0 {
            return Err(format!(
                "the mesh search reply ends after {} of its {} records",
                self.records - self.left,
                self.records
            ));
        }
        Ok(self.next.is_none())
    }

    /// The search read so far (all of it once [`MeshReader::read`] said `true`).
    pub fn finish(self) -> MeshPage {
        self.page
    }
}
