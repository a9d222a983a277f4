//! Mesh explorer: planner-core's ranked search over every DP × TP × PP × CP × EP
//! of the cluster (each mesh once, at its best ZeRO stage, micro-batch, schedule and
//! recompute), sortable and
//! filterable, with the rejected meshes and why. Clicking a row applies its
//! layout to the whole page.
//!
//! The search runs in the page's Web Worker (`app-worker/`,
//! `planner_core::edges::mesh_page`), never on the page's thread: one (TP, PP, CP) block
//! of the 16,384-GPU search could outlast a frame there (issue 16). The page posts the
//! scenario as its share link, shows the worker's progress, and reads the finished
//! search's records within a time budget per animation frame; a request made while the
//! worker searches waits for its reply (only the latest waits), an input in a drag or in
//! typing waits until the inputs are still, and a reply to an older scenario is dropped.
//! The ranking, the table's first rows and each later chunk of [`ROWS_PER_FRAME`] rows
//! each get a frame of their own.

use leptos::prelude::*;
use planner_core::edges::link;
use planner_core::edges::mesh_page::{MeshReader, MeshReply, MeshRequest, Read, REJECTED_ROWS};
use planner_core::edges::validation::PageReply;
use planner_core::input::layout::Layout;
use planner_core::input::offload::Offload;
use planner_core::input::scenario::{Scenario, Serving};
use planner_core::view::mesh::{Feasible, MeshDims, RejectReason, SearchResult};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};

use crate::app::Ctx;
use crate::format;
use crate::frames::after_this_frame_is_drawn;
use crate::perf::{now_ms, timed};
use crate::views::error_band::BandNote;
use crate::views::markup::{column_heads, SectionHead};
use crate::views::visibility::{near_screen, scenario_while_visible};
use crate::views::worker_handle::{drop_worker, kept_worker};
use planner_core::edges::error_band::{BandKind, WITHIN_BAND_NOTE};

/// Milliseconds of reading the worker's reply per animation frame: leaves room for the
/// page's own work.
const SLICE_BUDGET_MS: f64 = 3.0;
/// Records of the reply read between two looks at the clock.
const RECORDS_PER_LOOK: usize = 64;
/// Ranked rows drawn at first, and how many more each "show more" adds: each
/// row costs the frame that shows a new ranking (100 rows took ~40 ms of style
/// and layout in headless Chromium here; the table's box shows ~25).
const FIRST_ROWS: usize = 30;
const MORE_ROWS: usize = 50;
/// Rows added to the table per animation frame once a ranking is shown: the frame that
/// applied a 16,384-GPU ranking and drew all 30 first rows at once was the search's
/// longest (24–123 ms measured under load 4–5 here, issue 16), so they are drawn a chunk a
/// frame. Since rows are patched in place (`MeshRow`), a chunk frame's cost is mostly the
/// table's layout, the document's paint and the commit, whatever the chunk's size: traced,
/// 7.2–8.5 ms of the main thread's CPU a frame with 5 rows, 7.1–8.4 ms with 10, so 10 a
/// frame draws the first 30 in three such frames instead of six. [`FIRST_ROWS`] and
/// [`MORE_ROWS`] are multiples of it, so every chunk but the list's last is full.
const ROWS_PER_FRAME: usize = 10;

/// An input within this many milliseconds of the one before is part of a drag or of
/// typing: its search waits until the inputs have been still this long (the deployment
/// search's wait, `serving_latency::SETTLE`). A lone input's search starts once its frame
/// is drawn ([`SearchState::post_when_drawn`]).
const STILL_MS: f64 = 120.0;

/// What the search depends on: the scenario without its layout, serving and bill inputs.
fn search_key(s: &Scenario) -> Scenario {
    let mut k = s.clone();
    k.layout = Layout::default();
    k.serving = Serving::default();
    // The page's mesh search ranks by step time: the run's bill does not change its answer.
    k.bill = Default::default();
    k
}

/// How long the last search took in this browser.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct Timing {
    /// From the request to the ranked result shown, wall clock.
    wall_ms: f64,
    /// The worker's search, its clock.
    busy_ms: f64,
    /// Longest slice of the page's own work on the reply (reading its records).
    longest_slice_ms: f64,
    /// Animation frames the page spent reading the reply.
    frames: u32,
}

#[derive(Clone, Copy)]
struct SearchState {
    /// Number of the latest request (the scenario on the page); replies to others are dropped.
    generation: StoredValue<u64>,
    /// The mesh explorer's worker: created with the first search, kept for the page.
    worker: StoredValue<Option<Worker>, LocalStorage>,
    /// Whether the worker has said it is ready.
    ready: StoredValue<bool>,
    /// Whether a request is with the worker (it searches one at a time, to the end).
    in_flight: StoredValue<bool>,
    /// The latest request not sent yet (the worker was busy or not ready).
    queued: StoredValue<Option<String>>,
    /// The latest finished search's records, being read a slice a frame.
    reading: StoredValue<Option<Box<MeshReader>>>,
    /// The latest ranking (or why there is none): kept, dimmed, while the next search runs,
    /// so an input that restarts the search leaves the table laid out (clearing it emptied
    /// the table and reflowed the page in the input's own frame, issue 16).
    result: RwSignal<Option<Result<SearchResult, String>>>,
    /// Whether a search is running (its result is not `result` yet).
    searching: RwSignal<bool>,
    /// Why the latest reply was refused, while `result` still shows the ranking before it.
    refused: RwSignal<Option<String>>,
    progress: RwSignal<(usize, usize)>,
    timing: RwSignal<Option<Timing>>,
    started_ms: StoredValue<f64>,
    /// When the latest search input came ([`STILL_MS`]).
    last_input_ms: StoredValue<f64>,
    acc: StoredValue<Timing>,
    /// Rankings shown since the page loaded (the status's `data-searches`): a test waits
    /// for this to pass the count it read before its input.
    shown_results: RwSignal<u64>,
    /// Rows the table may show ("show more" adds [`MORE_ROWS`]).
    shown: RwSignal<usize>,
    /// Rows drawn so far: grows by [`ROWS_PER_FRAME`] a frame up to `shown`.
    drawn: RwSignal<usize>,
}

impl SearchState {
    fn start(self, key: &Scenario) {
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        self.reading.set_value(None);
        // Set only on a change: during a drag every input restarts the search, and a set
        // signal re-renders what reads it even when its value is the same.
        if !self.searching.get_untracked() {
            self.searching.set(true);
        }
        if self.progress.get_untracked() != (0, 0) {
            self.progress.set((0, 0));
        }
        let now = now_ms();
        let in_a_stream = self.in_a_stream(now);
        self.last_input_ms.set_value(now);
        self.started_ms.set_value(now);
        self.acc.set_value(Timing::default());
        let request = MeshRequest {
            seq: generation,
            query: link::encode(key),
        }
        .to_text();
        // Only the latest waits: an older scenario's request is never searched.
        self.queued.set_value(Some(request));
        self.worker();
        self.post(generation, in_a_stream);
    }

    /// Whether an input at `now_ms` follows the one before within [`STILL_MS`].
    fn in_a_stream(self, now_ms: f64) -> bool {
        now_ms - self.last_input_ms.get_value() < STILL_MS
    }

    /// Posts the queued request once the inputs are still ([`Self::post_when_still`]) when
    /// they come `in_a_stream`, else once the input's frame is drawn.
    fn post(self, generation: u64, in_a_stream: bool) {
        if in_a_stream {
            self.post_when_still(generation);
        } else {
            self.post_when_drawn(generation);
        }
    }

    /// Posts the queued request once the inputs have been still for [`STILL_MS`] (and the
    /// frame after is drawn). While the user drags or types, each input restarts this wait,
    /// so no search runs for a value the user is passing through. Searched back to back
    /// instead, through 240 global-batch edits on the 16,384-GPU page, the worker shared
    /// the CPU with the page's frames: input to painted frame p95 19.0–20.2 ms, against
    /// 16.4 ms for a slider that changes nothing (issue 16).
    fn post_when_still(self, generation: u64) {
        set_timeout(
            move || {
                if self.generation.get_value() == generation {
                    self.post_when_drawn(generation);
                }
            },
            std::time::Duration::from_millis(STILL_MS as u64),
        );
    }

    /// Posts the queued request once the input's frame is drawn, if no newer input came
    /// meanwhile and the worker is free. Posted at once, the worker's search took a core
    /// from that frame's rendering on this 2-core machine (its main-thread work 9 ms of CPU
    /// spread over a 27–43 ms frame, traced, issue 12); posted after the commit only, it
    /// still overlapped the frame's raster (8.6 ms of CPU) and the display compositor's draw
    /// (9.2 ms), traced.
    fn post_when_drawn(self, generation: u64) {
        after_this_frame_is_drawn(move || {
            if self.generation.get_value() == generation
                && self.ready.get_value()
                && !self.in_flight.get_value()
            {
                self.send_queued();
            }
        });
    }

    /// The worker is free again: the request that waited goes as a new input's would.
    fn worker_free(self) {
        self.in_flight.set_value(false);
        if self.queued.with_value(Option::is_some) {
            self.post(self.generation.get_value(), self.in_a_stream(now_ms()));
        }
    }

    /// A search that ended without a ranking (the message says why).
    fn fail(self, message: String) {
        self.searching.set(false);
        self.refused.set(None);
        self.result.set(Some(Err(message)));
    }

    /// A reply that did not read (malformed, cut short): the ranking shown stays as it
    /// was, with the message; with none shown yet, the message is the result.
    fn refuse(self, why: String) {
        let message = format!("the mesh search's reply did not parse: {why}");
        if self.result.with_untracked(|r| matches!(r, Some(Ok(_)))) {
            self.searching.set(false);
            self.refused.set(Some(message));
        } else {
            self.fail(message);
        }
    }

    fn worker(self) -> Option<Worker> {
        let on_message = move |_: &Worker, ev: MessageEvent| {
            let t0 = now_ms();
            let data = ev.data();
            let t1 = now_ms();
            crate::perf::mark("mesh_msg_data", t0, t1 - t0);
            // A finished search comes as bytes (a transferred buffer), the rest as text.
            if let Some(array) = data.dyn_ref::<js_sys::Uint8Array>() {
                let bytes = array.to_vec();
                let t2 = now_ms();
                crate::perf::mark(&format!("mesh_msg_bytes {} B", bytes.len()), t1, t2 - t1);
                crate::perf::timed_mark("mesh_msg_read", || self.handle(Read::from_bytes(bytes)));
                return;
            }
            let text = data.as_string().unwrap_or_default();
            let t2 = now_ms();
            crate::perf::mark(&format!("mesh_msg_string {} B", text.len()), t1, t2 - t1);
            crate::perf::timed_mark("mesh_msg_read", || self.read(text));
        };
        let on_error = move |message: String| {
            // A worker that failed answers nothing more: the next search starts another.
            drop_worker(self.worker);
            self.ready.set_value(false);
            self.in_flight.set_value(false);
            self.fail(format!("the mesh search's worker failed: {message}"));
        };
        kept_worker(self.worker, on_message, on_error)
            .map_err(|e| self.fail(format!("the mesh search's worker did not start: {e}")))
            .ok()
    }

    fn post_now(self, request: String) {
        let Some(worker) = self.worker() else { return };
        match worker.post_message(&JsValue::from_str(&request)) {
            Ok(()) => self.in_flight.set_value(true),
            Err(e) => self.fail(format!("posting to the mesh search's worker failed: {e:?}")),
        }
    }

    /// The worker is free again: sends the request that waited, if any.
    fn send_queued(self) {
        if let Some(q) = self.queued.try_update_value(Option::take).flatten() {
            self.post_now(q);
        }
    }

    fn read(self, text: String) {
        // Compared whole: reading a 16,384-GPU reply as a `PageReply` first split all of its
        // records (16 ms of the page's thread per reply, measured).
        if text == PageReply::Ready.to_text() {
            self.ready.set_value(true);
            self.send_queued();
            return;
        }
        self.handle(Read::from_text(text));
    }

    /// A reply read as far as its head ([`Read::from_text`] or [`Read::from_bytes`]).
    fn handle(self, read: Result<Read, String>) {
        let generation = self.generation.get_value();
        match read {
            Ok(Read::Reply(MeshReply::Progress { seq, done, all })) => {
                if seq == generation {
                    self.progress.set((done, all));
                }
            }
            Ok(Read::Reply(MeshReply::Failed { seq, message })) => {
                self.worker_free();
                if seq == generation {
                    self.fail(message);
                }
            }
            Ok(Read::Reply(MeshReply::Done(_))) => {}
            Ok(Read::Records(reader)) => {
                self.worker_free();
                // A reply to an older scenario: its ranking is never shown.
                if reader.seq() != generation {
                    return;
                }
                self.reading.set_value(Some(reader));
                self.pump(generation);
            }
            Err(e) => {
                self.worker_free();
                self.refuse(e);
            }
        }
    }

    /// Reads the reply's records within [`SLICE_BUDGET_MS`] per animation frame.
    fn pump(self, generation: u64) {
        request_animation_frame(move || {
            if self.generation.get_value() != generation {
                return;
            }
            let t0 = now_ms();
            let mut outcome = Ok(false);
            crate::perf::timed_mark("mesh_read", || {
                self.reading.update_value(|r| {
                    if let Some(reader) = r {
                        loop {
                            outcome = reader.read(RECORDS_PER_LOOK);
                            if !matches!(outcome, Ok(false)) || now_ms() - t0 >= SLICE_BUDGET_MS {
                                break;
                            }
                        }
                    }
                })
            });
            let slice = now_ms() - t0;
            self.acc.update_value(|a| {
                a.longest_slice_ms = a.longest_slice_ms.max(slice);
                a.frames += 1;
            });
            match outcome {
                Ok(false) => self.pump(generation),
                Ok(true) => self.show(generation),
                Err(e) => {
                    self.reading.set_value(None);
                    self.refuse(e);
                }
            }
        });
    }

    /// Shows the read ranking in the next frame: the last read slice and the ranking each
    /// get a frame of their own.
    fn show(self, generation: u64) {
        request_animation_frame(move || {
            if self.generation.get_value() != generation {
                return;
            }
            let _t = now_ms();
            let Some(reader) = self.reading.try_update_value(Option::take).flatten() else {
                return;
            };
            let page = reader.finish();
            crate::perf::record("mesh_worker", page.worker_ms);
            let mut t = self.acc.get_value();
            t.busy_ms = page.worker_ms;
            t.wall_ms = now_ms() - self.started_ms.get_value();
            self.progress.set(page.blocks);
            // Set before the result: the ranking's frame draws the status, the hints and the
            // undimmed table, and its rows come a chunk a frame from the next one on (the
            // first chunk in this frame made it the costliest of the rerun: 11.5 ms of the
            // main thread's CPU, traced).
            self.drawn.set(0);
            self.timing.set(Some(t));
            self.searching.set(false);
            self.refused.set(None);
            self.result.set(Some(Ok(page.result)));
            self.shown_results.update(|n| *n += 1);
            crate::perf::mark("mesh_show", _t, now_ms() - _t);
            self.reveal(generation);
        });
    }

    /// Draws [`ROWS_PER_FRAME`] more rows in each following frame until `shown` are drawn
    /// (`drawn` is 0 in the ranking's own frame).
    fn reveal(self, generation: u64) {
        if self.drawn.get_untracked() >= self.shown.get_untracked() {
            return;
        }
        request_animation_frame(move || {
            if self.generation.get_value() != generation {
                return;
            }
            self.drawn.update(|d| *d += ROWS_PER_FRAME);
            self.reveal(generation);
        });
    }
}

/// Sortable columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    Rank,
    Dp,
    Tp,
    Pp,
    Cp,
    Ep,
    Memory,
    Headroom,
    Step,
    Tokens,
    Mfu,
    Comm,
    Bubble,
}

fn sort_value(c: Col, rank: usize, f: &Feasible, sc: &Scenario) -> f64 {
    match c {
        Col::Rank => rank as f64,
        Col::Dp => f64::from(f.dims.dp),
        Col::Tp => f64::from(f.dims.tp),
        Col::Pp => f64::from(f.dims.pp),
        Col::Cp => f64::from(f.dims.cp),
        Col::Ep => f64::from(f.dims.ep),
        Col::Memory => f.peak_memory_bytes,
        Col::Headroom => f.headroom_bytes,
        Col::Step => f.step_s,
        Col::Tokens => f.tokens_per_s_per_gpu(&sc.training),
        Col::Mfu => f.mfu,
        Col::Comm => f.exposed_comm_s,
        Col::Bubble => f.bubble_s,
    }
}

/// Degree filters: `None` = any.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct Filter {
    dp: Option<u32>,
    tp: Option<u32>,
    pp: Option<u32>,
    cp: Option<u32>,
    ep: Option<u32>,
}

impl Filter {
    fn keeps(&self, d: &MeshDims) -> bool {
        let ok = |want: Option<u32>, got: u32| want.is_none_or(|w| w == got);
        ok(self.dp, d.dp)
            && ok(self.tp, d.tp)
            && ok(self.pp, d.pp)
            && ok(self.cp, d.cp)
            && ok(self.ep, d.ep)
    }
}

/// Applies a ranked layout with the offload its search priced ([`SearchResult::offload`]).
fn apply(ctx: Ctx, f: Feasible, offload: Offload) {
    ctx.scenario.update(|s| {
        s.layout = f.layout();
        s.training.offload = offload;
    });
}

/// The search's state before its first search.
fn new_state() -> SearchState {
    SearchState {
        generation: StoredValue::new(0),
        worker: StoredValue::new_local(None),
        ready: StoredValue::new(false),
        in_flight: StoredValue::new(false),
        queued: StoredValue::new(None),
        reading: StoredValue::new(None),
        result: RwSignal::new(None),
        searching: RwSignal::new(false),
        refused: RwSignal::new(None),
        progress: RwSignal::new((0, 0)),
        timing: RwSignal::new(None),
        started_ms: StoredValue::new(0.0),
        last_input_ms: StoredValue::new(f64::NEG_INFINITY),
        acc: StoredValue::new(Timing::default()),
        shown_results: RwSignal::new(0),
        shown: RwSignal::new(FIRST_ROWS),
        drawn: RwSignal::new(0),
    }
}

/// The ranking's rows that pass `filter`, in `sort`'s order: (rank, row, sort value).
fn ranked_rows(
    ctx: Ctx,
    state: SearchState,
    filter: RwSignal<Filter>,
    sort: RwSignal<(Col, bool)>,
) -> Rows {
    Memo::new(move |_| {
        crate::perf::timed_mark("mesh_rank", || {
            let f = filter.get();
            let (col, desc) = sort.get();
            state.result.with(|r| {
                let Some(Ok(r)) = r else { return Vec::new() };
                ctx.scenario.with_untracked(|sc| {
                    let mut v: Vec<(usize, Feasible, f64)> = r
                        .feasible
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| f.keeps(&x.dims))
                        .map(|(i, x)| (i, *x, sort_value(col, i, x, sc)))
                        .collect();
                    v.sort_by(|a, b| {
                        let o = a.2.total_cmp(&b.2).then(a.0.cmp(&b.0));
                        if desc {
                            o.reverse()
                        } else {
                            o
                        }
                    });
                    v
                })
            })
        })
    })
}

/// Ranked rows, as [`ranked_rows`] gives them: (rank, row, sort value).
type Rows = Memo<Vec<(usize, Feasible, f64)>>;

/// The mesh explorer section.
#[component]
pub fn MeshView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let section = NodeRef::<leptos::html::Section>::new();
    // Searches when the explorer is near the screen: a slider moved elsewhere costs it nothing.
    let scenario = scenario_while_visible(ctx.scenario, near_screen(section));
    let key = Memo::new(move |_| timed("mesh_key", || scenario.with(search_key)));
    let state = new_state();
    // A warm-up's neighbour is not searched, nor its way back to the key already searched.
    Effect::new(move |_| {
        key.with(|k| {
            if !crate::warm_up::visiting() {
                state.start(k);
            }
        })
    });

    let tab = RwSignal::new("feasible");
    let sort = RwSignal::new((Col::Rank, false));
    let filter = RwSignal::new(Filter::default());
    let rows = ranked_rows(ctx, state, filter, sort);
    let current_layout = Memo::new(move |_| scenario.with(|s| s.layout.clone()));

    view! {
        <section node_ref=section class="view" aria-labelledby="mesh-title" data-testid="mesh-view">
            <SectionHead id="mesh-title" title="Mesh explorer" explain="Every way to split the cluster's GPUs into DP × TP × PP × CP (and EP for mixture-of-experts models), crossed with ZeRO stage, micro-batch, pipeline schedule and recompute. Candidates that break a divisibility rule or do not fit in memory are rejected; the rest are ranked by predicted step time, each mesh listed once at its best setting. Click a row to apply its layout to every view." />
            <MeshStatus state=state rows=rows />
            <p class="explain mesh-band" data-testid="mesh-band">
                "Step times: "
                <BandNote kind=BandKind::StepTime testid="mesh-step-band"/>
                ". Rows marked ≈ are within the model's error of the best: benchmark both."
            </p>
            <MeshNotices state=state />
            <Hints state=state />
            <div class="mesh-tabs" role="tablist">
                {[("feasible", "Feasible (ranked)"), ("rejected", "Rejected")]
                    .into_iter()
                    .map(|(id, text)| {
                        view! {
                            <button
                                role="tab"
                                data-testid=format!("mesh-tab-{id}")
                                aria-selected=move || (tab.get() == id).to_string()
                                on:click=move |_| tab.set(id)
                            >
                                {text}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <div class="mesh-filters" role="group" aria-label="Filter by degree">
                <FilterField label="DP" id="dp" filter=filter get=|f| f.dp put=|f, v| f.dp = v />
                <FilterField label="TP" id="tp" filter=filter get=|f| f.tp put=|f, v| f.tp = v />
                <FilterField label="PP" id="pp" filter=filter get=|f| f.pp put=|f, v| f.pp = v />
                <FilterField label="CP" id="cp" filter=filter get=|f| f.cp put=|f, v| f.cp = v />
                <FilterField label="EP" id="ep" filter=filter get=|f| f.ep put=|f, v| f.ep = v />
                <button data-testid="mesh-filter-clear" on:click=move |_| filter.set(Filter::default())>"Any mesh"</button>
            </div>
            <Show when=move || tab.get() == "feasible" fallback=move || view! { <RejectedTable state=state filter=filter /> }>
                <FeasibleTable state=state rows=rows sort=sort current_layout=current_layout />
            </Show>
        </section>
    }
}

/// The search's status. It keeps its height while a search runs: the summary of the ranking on
/// the table (kept, dimmed, until the next is shown) on its own line, then the progress bar
/// with one line of how the search goes or went. A status that became one short line while
/// searching and three when done moved every section below it by 40 px twice a search (a
/// relayout, repaint and composite of the page below, and a `content-visibility` section
/// brought in and out of rendering, traced, issue 16).
#[component]
fn MeshStatus(state: SearchState, rows: Rows) -> impl IntoView {
    let shown = state.shown;
    let summary = move || {
        state.result.with(|r| match r {
            None => String::new(),
            Some(Err(e)) => format!("No search: {e}"),
            Some(Ok(r)) => format!(
                "{} candidates on {} GPUs: {} feasible in {} meshes, {} rejected.",
                format::thousands(r.candidates),
                format::thousands(r.world),
                format::thousands(r.feasible_count),
                format::thousands(r.feasible_meshes),
                format::thousands(r.candidates.saturating_sub(r.feasible_count)),
            ),
        })
    };
    let status = move || {
        let (done, all) = state.progress.get();
        let searching = format!("Searching… {done} of {all} (TP, PP, CP) blocks");
        if state.searching.get() {
            return searching;
        }
        match state.result.with(|r| r.as_ref().map(Result::is_ok)) {
            None => return searching,
            // The summary says why.
            Some(false) => return String::new(),
            Some(true) => {}
        }
        let t = state.timing.get().unwrap_or_default();
        format!(
            "Searched in {:.0} ms: {:.0} ms in the page's worker, its reply read over {} frame{} (longest slice {:.1} ms).",
            t.wall_ms,
            t.busy_ms,
            t.frames,
            if t.frames == 1 { "" } else { "s" },
            t.longest_slice_ms,
        )
    };
    view! {
        <div
            class="mesh-status"
            data-testid="mesh-status"
            data-done=move || (!state.searching.get() && state.result.with(Option::is_some)).to_string()
            data-searches=move || state.shown_results.get().to_string()
            data-rows-pending=move || {
                let want = shown.get().min(rows.with(Vec::len));
                (state.drawn.get() < want).to_string()
            }
        >
            <span class="mesh-summary">{summary}</span>
            // A space for the status's text (a test or a screen reader reads it whole);
            // a flex container draws none.
            " "
            <progress
                max=move || state.progress.get().1.max(1)
                value=move || state.progress.get().0
                aria-label="Search progress"
            ></progress>
            <span>{status}</span>
        </div>
    }
}

/// Why the search stopped early or needs offload, a reply it refused, and its timing (hidden,
/// for the tests).
#[component]
fn MeshNotices(state: SearchState) -> impl IntoView {
    view! {
        {move || {
            state.result.with(|r| match r {
                Some(Ok(SearchResult { stopped: Some(stop), .. })) => Some(view! {
                    <p class="issue warning" data-testid="mesh-stopped" role="status">{stop.message.clone()}</p>
                }.into_any()),
                Some(Ok(r)) if !r.offload.is_none() => Some(view! {
                    <p class="issue warning" data-testid="mesh-offload" role="status">
                        {format!(
                            "Nothing fits without offload, so every candidate below uses {} (applied with its layout).",
                            r.offload.label()
                        )}
                    </p>
                }.into_any()),
                _ => None,
            })
        }}
        {move || state.refused.get().map(|m| view! {
            <p class="issue error" data-testid="mesh-refused" role="alert">
                {format!("{m}. The table shows the search before it.")}
            </p>
        })}
        <span
            hidden
            data-testid="mesh-timing"
            data-wall-ms=move || state.timing.get().map(|t| format!("{:.3}", t.wall_ms)).unwrap_or_default()
            data-busy-ms=move || state.timing.get().map(|t| format!("{:.3}", t.busy_ms)).unwrap_or_default()
            data-longest-ms=move || state.timing.get().map(|t| format!("{:.3}", t.longest_slice_ms)).unwrap_or_default()
            data-frames=move || state.timing.get().map(|t| t.frames.to_string()).unwrap_or_default()
        ></span>
    }
}

/// A sortable column's header: a click sorts by it, a second reverses.
#[component]
fn SortHeader(
    c: Col,
    label: &'static str,
    title: &'static str,
    sort: RwSignal<(Col, bool)>,
) -> impl IntoView {
    view! {
        <th
            scope="col"
            title=title
            aria-sort=move || {
                let (col, desc) = sort.get();
                if col != c { "none" } else if desc { "descending" } else { "ascending" }
            }
        >
            <button
                class="sort"
                data-testid=format!("mesh-sort-{}", label.to_ascii_lowercase().replace([' ', '/', '.'], "-"))
                on:click=move |_| sort.update(|(col, desc)| {
                    if *col == c { *desc = !*desc } else { *col = c; *desc = false }
                })
            >
                {label}
                {move || {
                    let (col, desc) = sort.get();
                    if col != c { "" } else if desc { " ▼" } else { " ▲" }
                }}
            </button>
        </th>
    }
}

/// A degree filter: empty or 0 is any.
#[component]
fn FilterField(
    label: &'static str,
    id: &'static str,
    filter: RwSignal<Filter>,
    get: fn(&Filter) -> Option<u32>,
    put: fn(&mut Filter, Option<u32>),
) -> impl IntoView {
    view! {
        <label class="mesh-filter">
            {label}
            <input
                type="number"
                min="1"
                placeholder="any"
                data-testid=format!("mesh-filter-{id}")
                prop:value=move || filter.with(|f| get(f).map(|v| v.to_string()).unwrap_or_default())
                on:input=move |ev| {
                    let v = event_target_value(&ev).trim().parse::<u32>().ok().filter(|v| *v > 0);
                    filter.update(|f| put(f, v));
                }
            />
        </label>
    }
}

/// The feasible tab: how many rows match, the ranked table and "show more".
#[component]
fn FeasibleTable(
    state: SearchState,
    rows: Rows,
    sort: RwSignal<(Col, bool)>,
    current_layout: Memo<Layout>,
) -> impl IntoView {
    let shown = state.shown;
    let header = move |c: Col, label: &'static str, title: &'static str| {
        view! { <SortHeader c=c label=label title=title sort=sort /> }
    };
    view! {
        <p class="hint" data-testid="mesh-shown">
            {move || {
                let n = rows.with(|r| r.len());
                let kept = state.result.with(|r| match r { Some(Ok(r)) => r.feasible.len(), _ => 0 });
                format!(
                    "{} of the {} best meshes match the filter{}; each mesh once, at its best ZeRO stage, recompute, micro-batch and schedule; rank = position by step time, after every mesh without a † (a cost the model is known to underestimate: hover the rank).",
                    format::thousands(n as u64),
                    format::thousands(kept as u64),
                    if n > shown.get() { format!(" (first {} shown)", shown.get()) } else { String::new() },
                )
            }}
        </p>
        // The previous ranking stays laid out while the next search runs: dimmed (the
        // table's own layer's opacity: composited, no row restyled or repainted) and
        // inert (its rows ignore clicks and keys while `searching`; `pointer-events`
        // is inherited, and changing it restyled every row: 649 elements in the
        // 16,384-GPU search's input frame and 548 in the frame that undimmed it, traced).
        <div class="table-scroll mesh-table" class:searching=move || state.searching.get()>
            <table data-testid="mesh-table">
                <thead>
                    <tr>
                        {header(Col::Rank, "Rank", "Position by predicted step time")}
                        {header(Col::Dp, "DP", "Data-parallel degree")}
                        {header(Col::Tp, "TP", "Tensor-parallel degree")}
                        {header(Col::Pp, "PP", "Pipeline stages")}
                        {header(Col::Cp, "CP", "Context-parallel degree")}
                        {header(Col::Ep, "EP", "Expert-parallel degree")}
                        <th scope="col" title="ZeRO stage">"ZeRO"</th>
                        <th scope="col" title="Micro-batch (sequences)">"mb"</th>
                        <th scope="col" title="Pipeline schedule and virtual stages">"Schedule"</th>
                        <th scope="col" title="Activation recompute">"Recompute"</th>
                        {header(Col::Memory, "Memory", "Peak memory per GPU")}
                        {header(Col::Headroom, "Headroom", "Usable memory minus peak")}
                        {header(Col::Step, "Step", "Predicted step time")}
                        {header(Col::Tokens, "Tok/s/GPU", "Training tokens per second per GPU")}
                        {header(Col::Mfu, "MFU", "Model FLOPs utilisation")}
                        {header(Col::Comm, "Exposed comm", "Communication not hidden behind compute")}
                        {header(Col::Bubble, "Bubble", "Pipeline bubble time")}
                    </tr>
                </thead>
                <tbody>
                    // One slot per row the table may show; the list of slots is rebuilt
                    // only when "show more" changes `shown`. A slot shows the current
                    // ranking's row once the reveal reaches its chunk, until then the
                    // row it already shows, so a new ranking patches the last one's rows
                    // a chunk a frame (each cell's text is set where it changed; no row
                    // is built again) and the table keeps its height. Rebuilding a
                    // chunk's five rows cost 7.3-7.9 ms of the page's CPU a frame in
                    // the 16,384-GPU rerun (traced).
                    {move || (0..shown.get()).map(|slot| {
                        let first = slot - slot % ROWS_PER_FRAME;
                        let row = Memo::new(move |prev: Option<&Option<(usize, Feasible)>>| timed("mesh_rows", || {
                            if state.drawn.get() > first || prev.is_none() {
                                rows.with(|r| r.get(slot).map(|(rank, f, _)| (*rank, *f)))
                            } else {
                                prev.copied().flatten()
                            }
                        }));
                        view! {
                            <Show when=move || row.with(Option::is_some)>
                                <MeshRow row=row state=state current_layout=current_layout />
                            </Show>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        <Show when=move || rows.with(|r| r.len() > shown.get())>
            <button
                class="more"
                data-testid="mesh-more"
                on:click=move |_| {
                    shown.update(|n| *n += MORE_ROWS);
                    // A click draws its rows at once, as before chunking.
                    state.drawn.set(shown.get_untracked());
                }
            >
                {format!("Show {MORE_ROWS} more")}
            </button>
        </Show>
    }
}

/// One ranked row of the table: its cells follow `row` (set a cell's text where it changed).
#[component]
fn MeshRow(
    row: Memo<Option<(usize, Feasible)>>,
    state: SearchState,
    current_layout: Memo<Layout>,
) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let cell = move |text: fn(usize, &Feasible, &Scenario) -> String| {
        move || {
            row.with(|r| {
                r.as_ref().map_or_else(String::new, |(rank, f)| {
                    ctx.scenario.with_untracked(|sc| text(*rank, f, sc))
                })
            })
        }
    };
    // Inert while the next search runs (its ranking may differ).
    let apply_row = move || {
        if state.searching.get_untracked() {
            return;
        }
        if let Some((_, f)) = row.get_untracked() {
            let offload = state.result.with_untracked(|r| match r {
                Some(Ok(r)) => r.offload,
                _ => Offload::None,
            });
            apply(ctx, f, offload);
        }
    };
    // Within the model's error of the best candidate (planner-core edges/error_band.rs).
    let band = crate::views::error_band::band_memo(ctx, BandKind::StepTime);
    let near_best = move || {
        let best = state.result.with(|r| match r {
            Some(Ok(r)) => r.feasible.first().map(|f| f.step_s),
            _ => None,
        });
        row.with(|r| match (r, best) {
            (Some((rank, f)), Some(best)) if *rank > 0 => {
                band.with(|b| b.as_ref().is_some_and(|b| b.indistinct(best, f.step_s)))
            }
            _ => false,
        })
    };
    view! {
        <tr
            class:near-best=near_best
            class:selected=move || row.with(|r| r.is_some_and(|(_, f)| current_layout.with(|c| *c == f.layout())))
            data-testid="mesh-row"
            data-mesh=cell(|_, f, _| {
                let d = f.dims;
                format!("dp{} tp{} pp{} cp{} ep{}", d.dp, d.tp, d.pp, d.cp, d.ep)
            })
            data-rank=cell(|rank, _, _| rank.to_string())
            tabindex="0"
            title="Apply this layout"
            on:click=move |_| apply_row()
            on:keydown=move |ev| {
                if ev.key() == "Enter" || ev.key() == " " {
                    apply_row()
                }
            }
        >
            <td
                data-caveat=cell(|_, f, _| f.caveat.map_or("", |c| c.key()).to_string())
                title=cell(|_, f, _| f.caveat.map_or(String::new(), |c| c.message().to_string()))
            >
                {cell(|rank, f, _| format!("{}{}", rank + 1, if f.caveat.is_some() { " †" } else { "" }))}
                <span
                    class="near-best-mark"
                    data-testid="mesh-near-best"
                    hidden=move || !near_best()
                    title=WITHIN_BAND_NOTE
                >
                    " ≈"
                </span>
            </td>
            <td>{cell(|_, f, _| f.dims.dp.to_string())}</td>
            <td>{cell(|_, f, _| f.dims.tp.to_string())}</td>
            <td>{cell(|_, f, _| f.dims.pp.to_string())}</td>
            <td>{cell(|_, f, _| f.dims.cp.to_string())}</td>
            <td>{cell(|_, f, _| f.dims.ep.to_string())}</td>
            <td>{cell(|_, f, _| f.knobs.zero.label().to_string())}</td>
            <td>{cell(|_, f, _| f.knobs.micro_batch.to_string())}</td>
            <td>{cell(|_, f, _| {
                let k = f.knobs;
                if f.dims.pp == 1 {
                    "—".to_string()
                } else if k.virtual_stages > 1 {
                    format!("{} v={}", k.schedule.label(), k.virtual_stages)
                } else {
                    k.schedule.label().to_string()
                }
            })}</td>
            <td>{cell(|_, f, _| f.knobs.recompute.id().to_string())}</td>
            <td data-col="memory">{cell(|_, f, _| format::bytes(f.peak_memory_bytes))}</td>
            <td>{cell(|_, f, _| format::bytes(f.headroom_bytes))}</td>
            <td data-col="step">{cell(|_, f, _| format::seconds(f.step_s))}</td>
            <td>{cell(|_, f, sc| format::thousands(f.tokens_per_s_per_gpu(&sc.training).round() as u64))}</td>
            <td data-col="mfu">{cell(|_, f, _| format::percent(f.mfu))}</td>
            <td>{cell(|_, f, _| format::seconds(f.exposed_comm_s))}</td>
            <td>{cell(|_, f, _| format::seconds(f.bubble_s))}</td>
        </tr>
    }
}

/// The article's starting points for this cluster size, each with the best
/// candidate that follows it.
#[component]
fn Hints(state: SearchState) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    view! {
        <aside class="mesh-hints" data-testid="mesh-hints" aria-label="The article's starting points">
            <strong>"Where the article starts"</strong>
            <ul>
                {move || {
                    state.result.with(|r| {
                        let Some(Ok(r)) = r else { return Vec::new() };
                        r.hints
                            .iter()
                            .map(|h| {
                                let best = h.best_rank.and_then(|i| r.feasible.get(i).copied());
                                let offload = r.offload;
                                view! {
                                    <li data-hint=h.key.clone()>
                                        {h.text.clone()}
                                        {match (h.best_rank, best) {
                                            (Some(i), Some(f)) => {
                                                let d = f.dims;
                                                view! {
                                                    " — best such mesh: rank "
                                                    {i + 1}
                                                    " "
                                                    <button
                                                        class="link"
                                                        on:click=move |_| apply(ctx, f, offload)
                                                    >
                                                        {format!("apply DP {} × TP {} × PP {} × CP {} ({})", d.dp, d.tp, d.pp, d.cp, format::seconds(f.step_s))}
                                                    </button>
                                                }
                                                    .into_any()
                                            }
                                            (Some(i), None) => view! { {format!(" — best such mesh: rank {} (beyond the kept list)", i + 1)} }.into_any(),
                                            (None, _) => view! { " — no feasible candidate follows it here" }.into_any(),
                                        }}
                                    </li>
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                }}
            </ul>
        </aside>
    }
}

fn reason_text(key: &str) -> String {
    RejectReason::from_key(key).map_or_else(|| key.to_string(), |r| r.message().to_string())
}

/// Rejected blocks, with the count of candidates per reason.
#[component]
fn RejectedTable(state: SearchState, filter: RwSignal<Filter>) -> impl IntoView {
    view! {
        <div data-testid="mesh-rejected">
            <table class="reasons">
                <caption>"Rejected candidates by reason (a candidate with two reasons counts twice)"</caption>
                <tbody>
                    {move || state.result.with(|r| {
                        let Some(Ok(r)) = r else { return Vec::new() };
                        r.rejections
                            .iter()
                            .map(|c| view! { <tr><th scope="row">{reason_text(&c.reason)}</th><td>{format::thousands(c.candidates)}</td></tr> })
                            .collect::<Vec<_>>()
                    })}
                </tbody>
            </table>
            <div class="table-scroll mesh-table">
                <table data-testid="mesh-rejected-table">
                    <thead>
                        {column_heads(&["DP", "TP", "PP", "CP", "EP", "Knobs", "Candidates", "Why"])}
                    </thead>
                    <tbody>
                        {move || {
                            let f = filter.get();
                            state.result.with(|r| {
                                let Some(Ok(r)) = r else { return Vec::new() };
                                r.rejected
                                    .iter()
                                    .filter(|x| f.keeps(&x.dims))
                                    .take(REJECTED_ROWS)
                                    .map(|x| {
                                        let d = x.dims;
                                        let mut knobs = Vec::new();
                                        if let Some(z) = x.zero { knobs.push(z.label().to_string()); }
                                        if let Some(rc) = x.recompute { knobs.push(format!("recompute {}", rc.id())); }
                                        if let Some(s) = x.schedule { knobs.push(s.label().to_string()); }
                                        if let Some(v) = x.virtual_stages.filter(|v| *v > 1) { knobs.push(format!("v={v}")); }
                                        if let Some(mb) = x.micro_batch { knobs.push(format!("mb {mb}")); }
                                        let knobs = if knobs.is_empty() { "every setting".to_string() } else { knobs.join(", ") };
                                        let mut why: Vec<String> = x.reasons.iter().map(|r| r.message().to_string()).collect();
                                        if x.peak_memory_bytes > 0.0 {
                                            why.push(format!("peak {} > {}", format::bytes(x.peak_memory_bytes), format::bytes(r.usable_bytes)));
                                        }
                                        view! {
                                            <tr data-testid="mesh-rejected-row">
                                                <td>{d.dp}</td>
                                                <td>{d.tp}</td>
                                                <td>{d.pp}</td>
                                                <td>{d.cp}</td>
                                                <td>{d.ep}</td>
                                                <td>{knobs}</td>
                                                <td>{format::thousands(x.candidates)}</td>
                                                <td>{why.join("; ")}</td>
                                            </tr>
                                        }
                                    })
                                    .collect::<Vec<_>>()
                            })
                        }}
                    </tbody>
                </table>
            </div>
        </div>
    }
}
