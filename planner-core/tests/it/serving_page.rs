//! The serving latency view's worker protocol (`serving_page`): the worker's answer is
//! planner-core's own numbers, and the page's decoder reads exactly what serde wrote.

use planner_core::edges::link;
use planner_core::edges::serving_page::{
    answer, search_inputs, search_scenario, view_inputs, PageView, ServingReply, ServingRequest,
    ViewReply,
};
use planner_core::resolve::presets;
use planner_core::search::deployment::serve_search;
use planner_core::serving::latency::{serving_time, ServingLoad};

fn request(search: bool) -> ServingRequest {
    ServingRequest {
        seq: 7,
        query: link::encode(&presets::default_scenario()),
        prompt_tokens: 1024,
        output_tokens: 256,
        ttft_target_s: 2.0,
        tpot_target_s: 0.05,
        search,
    }
}

fn page(search: bool) -> planner_core::edges::serving_page::ServingPage {
    match answer(&request(search).to_text(), &|| 0.0) {
        ServingReply::Page(p) => p,
        other => panic!("not a page: {other:?}"),
    }
}

#[test]
fn the_curve_at_the_scenarios_concurrency_is_serving_times_tpot() {
    let base = presets::default_scenario();
    let c = base.serving.target_concurrency;
    let p = page(false);
    assert_eq!(p.seq, 7);
    assert_eq!(p.concurrency, c);
    assert!(p.search.is_none() && p.search_error.is_none() && p.curve_error.is_none());
    let load = ServingLoad {
        concurrency: c,
        ..ServingLoad::default()
    };
    let want = serving_time(&base, &load).expect("native").tpot.value;
    let here = p
        .curve
        .iter()
        .find(|q| q.concurrency == c)
        .expect("the scenario's concurrency is on the curve");
    // The same code on the same scenario (decoded from its link): equal, not close.
    assert_eq!(here.tpot_s, want);
    // The ladder doubles from 1: 1, 2, 4, ... (saturated points left out), in order.
    assert_eq!(p.curve[0].concurrency, 1);
    assert!(p
        .curve
        .windows(2)
        .all(|w| w[0].concurrency < w[1].concurrency));
}

#[test]
fn the_table_is_the_searchs_ranking() {
    let base = presets::default_scenario();
    let p = page(true);
    let s = p.search.expect("the search ran");
    // What the worker searches with: 2 s TTFT p99, 50 ms TPOT, 10 rows.
    let (target, space) = search_inputs(2.0, 0.05);
    assert_eq!(target.tpot_s, Some(0.05));
    assert_eq!(space.top, 10);
    let sc = search_scenario(&base);
    assert_eq!((sc.serving.tp, sc.serving.pp), (1, 1));
    let model = base.model_spec().expect("preset");
    let load = ServingLoad {
        concurrency: 1,
        ..ServingLoad::default()
    };
    let r = serve_search(&model, &sc, &load, &target, &space).expect("native");
    assert_eq!(s.rows.len(), r.ranked.len());
    for (row, d) in s.rows.iter().zip(&r.ranked) {
        assert_eq!(row.label, d.label);
        assert_eq!((row.tp, row.pp), d.deployment.serving_shape());
        assert_eq!(row.concurrency, d.deployment.concurrency);
        assert_eq!(row.tpot_s, d.tpot_s);
    }
    assert_eq!(s.points, r.points);
    assert_eq!(s.feasible_count, r.feasible_count);
    assert_eq!(s.candidates, r.candidates);
}

#[test]
fn the_pages_decoder_equals_serdes() {
    for reply in [
        answer(&request(true).to_text(), &|| 1.5),
        answer(&request(false).to_text(), &|| 0.0),
        ServingReply::Ready,
        ServingReply::Failed("x \"quoted\"".into()),
    ] {
        let text = serde_json::to_string(&reply).expect("serialise");
        let by_serde: ServingReply = serde_json::from_str(&text).expect("serde");
        assert_eq!(ServingReply::from_json(&text), Ok(by_serde));
    }
    for reply in [
        ViewReply::View(PageView {
            seq: 3,
            curve_html: "<dl>\"é\"</dl>".into(),
            search_html: None,
            curve_ms: 0.25,
            search_ms: None,
        }),
        ViewReply::View(PageView {
            seq: u64::MAX,
            curve_html: String::new(),
            search_html: Some("<table></table>".into()),
            curve_ms: 1.0,
            search_ms: Some(56.5),
        }),
        ViewReply::Ready,
        ViewReply::Failed("no".into()),
    ] {
        let text = serde_json::to_string(&reply).expect("serialise");
        let by_serde: ViewReply = serde_json::from_str(&text).expect("serde");
        assert_eq!(ViewReply::from_json(&text), Ok(by_serde));
        // The record text the worker posts reads back the same.
        assert_eq!(ViewReply::from_text(&reply.to_text()), Ok(reply.clone()));
    }
    let empty_search = ViewReply::View(PageView {
        seq: 0,
        curve_html: "a \u{1f} b \\ c".into(),
        search_html: Some(String::new()),
        curve_ms: 0.1 + 0.2,
        search_ms: Some(f64::MIN_POSITIVE),
    });
    assert_eq!(
        ViewReply::from_text(&empty_search.to_text()),
        Ok(empty_search)
    );
    assert!(ViewReply::from_text("View").is_err());
    // The request's lines read back to the request (floats print round-trip exact).
    let mut req = request(true);
    req.ttft_target_s = 0.1 + 0.2;
    assert_eq!(ServingRequest::from_text(&req.to_text()), Ok(req.clone()));
    let text = req.to_text().replacen("\n1\n", "\nyes\n", 1);
    assert!(ServingRequest::from_text(&text).is_err());
    assert_eq!(
        ServingRequest::from_text("1\n2"),
        Err("the serving request has no `output_tokens`".to_string())
    );
}

#[test]
fn hostile_requests_fail_with_a_message() {
    let mut req = request(false);
    req.query = "tp=banana".into();
    match answer(&req.to_text(), &|| 0.0) {
        ServingReply::Failed(m) => assert!(m.contains("tp"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        answer("{not json", &|| 0.0),
        ServingReply::Failed(_)
    ));
    assert!(ServingReply::from_json("{\"Page\":{}}").is_err());
    // An over-long prompt is refused by the load's own validation, named in the curve error.
    let mut req = request(true);
    req.prompt_tokens = u32::MAX;
    match answer(&req.to_text(), &|| 0.0) {
        ServingReply::Page(p) => {
            assert!(p.curve.is_empty() && p.curve_error.is_some());
            assert!(p.search.is_none() && p.search_error.is_some());
        }
        other => panic!("{other:?}"),
    }
}

/// The page keys its requests on `view_inputs`: scenarios that differ only in what it resets
/// (training batch, sequence, fine-tuning, offload, layout) get the same answer, curve and
/// search alike.
#[test]
fn training_and_layout_edits_do_not_change_the_serving_answer() {
    use planner_core::input::layout::{Recompute, ZeroStage};
    let base = presets::default_scenario();
    let answer_for = |sc: &planner_core::input::scenario::Scenario| {
        let req = ServingRequest {
            query: link::encode(sc),
            ..request(true)
        };
        match answer(&req.to_text(), &|| 0.0) {
            ServingReply::Page(p) => p,
            other => panic!("not a page: {other:?}"),
        }
    };
    let want = answer_for(&base);
    assert!(want.search.is_some() && !want.curve.is_empty());
    let mut edited = base.clone();
    edited.training.global_batch *= 2;
    edited.training.seq_len *= 2;
    edited.layout.dp = (base.layout.dp / 2).max(1);
    edited.layout.tp = base.layout.tp * 2;
    edited.layout.micro_batch = 2;
    edited.layout.recompute = Recompute::Full;
    edited.layout.zero = ZeroStage::Zero3;
    assert_ne!(edited, base);
    assert_eq!(view_inputs(&edited), view_inputs(&base));
    assert_eq!(answer_for(&edited), want);
    // What it keeps does change the answer: the serving inputs are in the key.
    let mut served = base.clone();
    served.serving.target_concurrency *= 2;
    assert_ne!(view_inputs(&served), view_inputs(&base));
}
