//! The mesh explorer's worker protocol (`mesh_page`): the worker's answer is the native
//! search's result, and the page's reader gets back exactly what the worker wrote.

use planner_core::base::record_text::{FIELD, RECORD};
use planner_core::edges::link;
use planner_core::edges::mesh_page::{
    answer, listed_rejections, page_space, MeshPage, MeshReply, MeshRequest, Read, KEPT_REJECTED,
    KEPT_RESULTS, REJECTED_ROWS,
};
use planner_core::input::layout::Layout;
use planner_core::input::offload::Offload;
use planner_core::input::scenario::Serving;
use planner_core::resolve::presets;
use planner_core::search::mesh::{search, ReasonCount, SearchStopped};
use planner_core::time::cost::{CostOptions, InputSource, StepModel};

/// The article's 512-GPU example as the page asks for it: layout and serving reset.
fn article_request(seq: u64) -> MeshRequest {
    let mut key = presets::article_mesh_scenario();
    key.layout = Layout::default();
    key.serving = Serving::default();
    MeshRequest {
        seq,
        query: link::encode(&key),
    }
}

fn done(reply: MeshReply) -> MeshPage {
    match reply {
        MeshReply::Done(p) => *p,
        other => panic!("not a finished search: {other:?}"),
    }
}

#[test]
fn the_workers_answer_is_the_native_search_of_the_same_scenario() {
    let req = article_request(42);
    let mut progress = Vec::new();
    let page = done(answer(&req, &|| 0.0, &mut |p| progress.push(p)));
    assert_eq!(page.seq, 42);

    // The page's space is what the page searched on its own thread before.
    let space = page_space();
    assert_eq!(
        (space.max_results, space.max_rejected),
        (KEPT_RESULTS, KEPT_REJECTED)
    );
    let sc = link::decode(&req.query).expect("the link decodes");
    let model = sc.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &sc, CostOptions::default());
    let mut native = search(&model, &sc, &space, &sm);
    native.rejected = listed_rejections(native.rejected);
    assert_eq!(page.result, native);
    assert!(native.feasible.len() > 10, "{}", native.feasible.len());
    assert_eq!(page.blocks.0, page.blocks.1);

    // Progress counts up, for this request, and never past the blocks in all.
    let mut last = 0;
    for p in &progress {
        let MeshReply::Progress { seq, done, all } = *p else {
            panic!("not progress: {p:?}")
        };
        assert_eq!((seq, all), (42, page.blocks.1));
        assert!(done > last && done < all, "{done} after {last} of {all}");
        last = done;
    }
}

#[test]
fn a_finished_search_reads_back_equal_whole_and_a_record_at_a_time() {
    let mut page = done(answer(&article_request(3), &|| 12.5, &mut |_| {}));
    // Every optional part filled, with text holding the separators and the escape.
    let r = &mut page.result;
    r.offload = Offload::OptimizerCpu;
    r.stopped = Some(SearchStopped {
        candidates: 9,
        evaluated: 8,
        max_evaluated: 7,
        blocks_searched: 2,
        blocks: 5,
        message: format!("stopped {FIELD} here {RECORD} \\ done"),
    });
    r.rejections_without_offload = vec![ReasonCount {
        reason: format!("a{RECORD}b"),
        candidates: 4,
    }];
    r.inputs.push(InputSource {
        key: format!("k{FIELD}"),
        measured: true,
    });
    r.hints[0].text.push(FIELD);
    r.hints[0].best_rank = None;
    assert!(r.rejected.iter().any(|x| x.zero.is_none()));
    assert!(r.rejected.iter().any(|x| x.peak_memory_bytes > 0.0));
    let text = MeshReply::Done(Box::new(page.clone())).to_text();
    let records_after_head = text.matches(RECORD).count();
    assert_eq!(
        MeshReply::from_text(text.clone()),
        Ok(MeshReply::Done(Box::new(page.clone())))
    );
    let Ok(Read::Records(mut reader)) = Read::from_text(text) else {
        panic!("a finished search's head")
    };
    assert_eq!(reader.seq(), 3);
    let mut reads = 1;
    while !reader.read(1).expect("a record") {
        reads += 1;
    }
    assert_eq!(
        reads, records_after_head,
        "one read per record after the head"
    );
    let r = &page.result;
    assert_eq!(
        records_after_head,
        r.rejections.len()
            + r.rejections_without_offload.len()
            + r.hints.len()
            + r.inputs.len()
            + r.feasible.len()
            + r.rejected.len()
    );
    assert_eq!(reader.finish(), page);
}

#[test]
fn progress_failures_and_requests_read_back() {
    for reply in [
        MeshReply::Progress {
            seq: 5,
            done: 17,
            all: 300,
        },
        MeshReply::Failed {
            seq: 6,
            message: format!("gpus: 0 {FIELD} is not a count"),
        },
    ] {
        assert_eq!(MeshReply::from_text(reply.to_text()), Ok(reply));
    }
    let req = article_request(9);
    assert_eq!(MeshRequest::from_text(&req.to_text()), Some(Ok(req)));
    // The worker's other requests are not mesh requests.
    assert_eq!(MeshRequest::from_text("validate"), None);
    assert!(matches!(
        MeshRequest::from_text("mesh\nseven\nv=1"),
        Some(Err(e)) if e.contains("`seq`")
    ));
}

#[test]
fn a_bad_scenario_or_a_damaged_reply_is_refused_with_its_field() {
    let reply = answer(
        &MeshRequest {
            seq: 2,
            query: "v=1&gpus=0".into(),
        },
        &|| 0.0,
        &mut |_| {},
    );
    let MeshReply::Failed { seq: 2, message } = reply else {
        panic!("not a failure: {reply:?}")
    };
    assert!(message.contains("gpus"), "{message}");

    let page = done(answer(&article_request(1), &|| 0.0, &mut |_| {}));
    let text = MeshReply::Done(Box::new(page)).to_text();
    // A feasible record with a step time that is not a number.
    let step = text
        .find(&format!("{RECORD}F{FIELD}"))
        .expect("a feasible record");
    let record_end = text[step + 1..].find(RECORD).expect("more records") + step + 1;
    let mut fields: Vec<&str> = text[step + 1..record_end].split(FIELD).collect();
    fields[13] = "fast";
    let damaged = format!(
        "{}{RECORD}{}{}",
        &text[..step],
        fields.join(&FIELD.to_string()),
        &text[record_end..]
    );
    let err = MeshReply::from_text(damaged).expect_err("a damaged step time");
    assert!(err.contains("`step_s`"), "{err}");
    // Cut short: a record with fewer fields.
    let cut = text[..text.len() - 3].to_string();
    assert!(MeshReply::from_text(cut).is_err());
    assert!(MeshReply::from_text("Ready".into()).is_err());

    // Cut at a record's end: every record left is whole, but the head says how many follow.
    let last = text.rfind(RECORD).expect("records");
    let err = MeshReply::from_text(text[..last].to_string()).expect_err("a record short");
    let all = text.matches(RECORD).count();
    assert!(
        err.contains(&format!("ends after {} of its {all} records", all - 1)),
        "{err}"
    );
    // Read a few records a frame, as the page does: refused at the end, not before.
    let Ok(Read::Records(mut reader)) = Read::from_text(text[..last].to_string()) else {
        panic!("a finished search's head")
    };
    let mut outcome = Ok(false);
    for _ in 0..all {
        outcome = reader.read(64);
        if outcome != Ok(false) {
            break;
        }
    }
    assert!(
        matches!(&outcome, Err(e) if e.contains("ends after")),
        "{outcome:?}"
    );
    // One record too many.
    let extra = format!("{text}{RECORD}{}", &text[last + 1..]);
    let err = MeshReply::from_text(extra).expect_err("a record too many");
    assert!(
        err.contains(&format!("more than the {all} records")),
        "{err}"
    );
    // Bytes that are not UTF-8 inside a record: refused, naming where.
    let mut bytes = text.clone().into_bytes();
    let at = step + 3;
    bytes[at] = 0xff;
    let err = MeshReply::from_bytes(bytes).expect_err("not UTF-8");
    assert!(err.contains("not UTF-8"), "{err}");
    let mut head = text.clone().into_bytes();
    head[1] = 0xc3;
    assert!(Read::from_bytes(head).is_err());
}

#[test]
fn the_bytes_the_worker_transfers_read_as_its_text() {
    let page = done(answer(&article_request(8), &|| 1.0, &mut |_| {}));
    let reply = MeshReply::Done(Box::new(page));
    let text = reply.to_text();
    assert_eq!(
        MeshReply::from_bytes(text.clone().into_bytes()),
        Ok(reply.clone())
    );
    assert_eq!(MeshReply::from_text(text), Ok(reply));
    // An empty search (no records after the head) reads whole at its first read.
    let mut empty = done(answer(&article_request(4), &|| 0.0, &mut |_| {}));
    let r = &mut empty.result;
    r.rejections.clear();
    r.hints.clear();
    r.inputs.clear();
    r.feasible.clear();
    r.rejected.clear();
    let reply = MeshReply::Done(Box::new(empty));
    let Ok(Read::Records(mut reader)) = Read::from_text(reply.to_text()) else {
        panic!("a finished search's head")
    };
    assert_eq!(reader.read(1), Ok(true));
    assert_eq!(MeshReply::Done(Box::new(reader.finish())), reply);
}

/// The 16,384-GPU case of the e2e test (Llama 3.1 405B on 2048 × 8 H100, batch 2048 × 8K).
fn search_of_16k() -> planner_core::search::mesh::SearchResult {
    use planner_core::input::hardware::{gpu_preset, Cluster};
    use planner_core::input::scenario::ModelChoice;
    let mut sc = presets::default_scenario();
    sc.model = ModelChoice::Preset("llama-3.1-405b".into());
    sc.cluster = Cluster::of(gpu_preset("h100-sxm").expect("h100"), 2048);
    sc.training.seq_len = 8192;
    sc.training.global_batch = 2048;
    let model = sc.model_spec().expect("model");
    let sm = StepModel::for_scenario(&model, &sc, CostOptions::default());
    search(&model, &sc, &page_space(), &sm)
}

// The worker sends each mesh's first REJECTED_ROWS rejected blocks only: for any degree
// filter, the page's list (the first REJECTED_ROWS the filter keeps) is the same as from
// the whole list.
#[test]
fn the_listed_rejections_give_every_filter_the_same_table() {
    let all = search_of_16k().rejected;
    let listed = listed_rejections(all.clone());
    assert_eq!(all.len(), KEPT_REJECTED);
    assert!(
        listed.len() < all.len() / 2,
        "{} of {}",
        listed.len(),
        all.len()
    );
    type Filter = fn(&planner_core::search::mesh::MeshDims) -> bool;
    let filters: [(&str, Filter); 6] = [
        ("any", |_| true),
        ("tp 8", |d| d.tp == 8),
        ("pp 1", |d| d.pp == 1),
        ("dp 16", |d| d.dp == 16),
        ("tp 4, cp 2", |d| d.tp == 4 && d.cp == 2),
        ("tp 1, pp 1", |d| d.tp == 1 && d.pp == 1),
    ];
    for (name, keeps) in filters {
        let table = |v: &[planner_core::search::mesh::Rejected]| -> Vec<_> {
            v.iter()
                .filter(|x| keeps(&x.dims))
                .take(REJECTED_ROWS)
                .copied()
                .collect()
        };
        assert_eq!(table(&listed), table(&all), "filter {name}");
    }
}
