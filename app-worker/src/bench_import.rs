//! The page's imports, read in the worker ([`planner_core::edges::import_page`]): a
//! Hugging Face `config.json` (`hf_config::import_hf_config`), a Hub model's configs, index
//! and shard headers the page fetched (`edges::hub`) and a gpu-bench report or
//! nccl-tests output (`import_sniff`, fitted by `calibration_fit`, layer steps checked by
//! `layer_step`), so none of those parsers reach the page's first-load wasm. The
//! measurement tables are drawn here as markup; every text from the file is escaped
//! ([`html`]).

use std::fmt::Write;

use planner_core::base::explain::{
    display_bytes as bytes, display_bytes_per_s as bytes_per_s, fmt_seconds as seconds, percent,
    sig3, signed_percent,
};
use planner_core::edges::calibration_fit::{
    compare_comm, compare_gemm, predicted_busbw_bytes_per_s, CommComparison, GemmComparison,
};
use planner_core::edges::hf_config::import_hf_config;
use planner_core::edges::import_page::{
    hub_files_answer, hub_files_reply_text, hub_headers_answer, BenchImport, BusbwSeries,
    ConfigReply, HubReply, Job,
};
use planner_core::edges::import_sniff::{
    fit_measurements, gpu_for_device, read_measurements, NcclContext,
};
use planner_core::edges::layer_step::{check_all, gate_up_matrices_for, LayerStepCheck};
use planner_core::edges::link;
use planner_core::input::collective::Collective;
use planner_core::input::gemm_efficiency::GemmEfficiency;
use planner_core::input::hardware::GpuSpec;
use planner_core::view::measured::CommModel;

use crate::serving_markup::html;

/// Sizes of each fitted and preset curve on the bus-bandwidth chart.
const CURVE_POINTS: usize = 48;

/// The reply to an import request, or `None` when `text` is another message.
pub fn answer(text: &str) -> Option<String> {
    Some(match Job::from_text(text)? {
        Job::Config { json } => match import_hf_config(&json) {
            Ok(spec) => ConfigReply::Imported(spec),
            Err(e) => ConfigReply::Failed(e.to_string()),
        }
        .to_text(),
        Job::HubFiles {
            repo,
            config,
            quant,
            index,
        } => hub_files_reply_text(&hub_files_answer(
            &repo,
            &config,
            quant.as_deref(),
            index.as_deref(),
        )),
        Job::HubHeaders {
            repo,
            config,
            quant,
            headers,
        } => match hub_headers_answer(&repo, &config, quant.as_deref(), &headers) {
            Ok(reply) => reply.to_text(),
            Err(e) => HubReply::failed_text(&e),
        },
        Job::Bench {
            file_name,
            scenario_query,
            text,
        } => match bench(&file_name, &scenario_query, &text) {
            Ok(import) => import.to_text(),
            Err(e) => BenchImport::failed_text(&e),
        },
    })
}

/// Log-spaced sizes covering `[lo/8, hi·8]`, `n` of them.
fn sizes_around(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (a, b) = ((lo / 8.0).max(1.0).log10(), (hi * 8.0).max(2.0).log10());
    (0..n)
        .map(|i| 10f64.powf(a + (b - a) * i as f64 / (n.max(2) - 1) as f64))
        .collect()
}

/// Parses and fits one file against the scenario's GPU (or the report's, when it names a preset).
fn bench(name: &str, scenario_query: &str, text: &str) -> Result<BenchImport, String> {
    let scenario = link::decode(scenario_query).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let read =
        read_measurements(text, &NcclContext::default()).map_err(|e| format!("{name}: {e}"))?;
    let (gpu, gpu_note) = gpu_for_device(read.device.as_deref(), &scenario.cluster.gpu);
    let fit = fit_measurements(&read.comm, &read.gemm, &gpu).map_err(|e| format!("{name}: {e}"))?;
    let (summary, assumed) = (fit.summary, fit.assumed);
    let mut fitted = assumed.clone();
    fitted.apply_calibration(&summary);
    let (gemm_curve, peak) = summary
        .gemm
        .as_ref()
        .map_or((GemmEfficiency::default(), gpu.bf16_flops_per_s), |g| {
            (g.efficiency, g.peak_flops_per_s)
        });
    let layer_steps: Vec<LayerStepCheck> = read
        .layer_steps
        .iter()
        .flat_map(|s| {
            check_all(
                std::slice::from_ref(s),
                gate_up_matrices_for(s.hidden, s.ffn),
                &fitted,
                &gemm_curve,
                peak,
                read.ranks_per_node,
            )
        })
        .collect();
    let comm = compare_comm(&read.comm, &summary, &assumed);
    let gemm = compare_gemm(&read.gemm, summary.gemm.as_ref(), gpu.bf16_flops_per_s);
    let kind = read.format.label();
    Ok(BenchImport {
        file_name: name.to_string(),
        kind: kind.to_string(),
        busbw: busbw_series(&comm, &fitted, &assumed),
        head_html: head_markup(name, kind, &gpu, &gpu_note, &read.notes),
        comm_html: comm_markup(&comm),
        rest_html: gemm_markup(&gemm, &gpu) + &steps_markup(&layer_steps),
        summary,
    })
}

/// One chart series per (collective, ranks, ranks per node), curves at [`CURVE_POINTS`] sizes around the measured ones.
fn busbw_series(
    rows: &[CommComparison],
    fitted: &CommModel,
    assumed: &CommModel,
) -> Vec<BusbwSeries> {
    let mut keys: Vec<(Collective, u64, u64)> = Vec::new();
    for r in rows {
        let k = (r.sample.op, r.sample.ranks, r.sample.ranks_per_node);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .enumerate()
        .map(|(i, (op, ranks, rpn))| {
            let mine: Vec<&CommComparison> = rows
                .iter()
                .filter(|r| {
                    (r.sample.op, r.sample.ranks, r.sample.ranks_per_node) == (op, ranks, rpn)
                })
                .collect();
            let lo = mine
                .iter()
                .map(|r| r.sample.bytes)
                .fold(f64::INFINITY, f64::min);
            let hi = mine.iter().map(|r| r.sample.bytes).fold(0.0, f64::max);
            let sizes = sizes_around(lo, hi, CURVE_POINTS);
            let curve = |m: &CommModel| {
                sizes
                    .iter()
                    .map(|&b| (b, predicted_busbw_bytes_per_s(m, op, ranks, rpn, b)))
                    .collect()
            };
            BusbwSeries {
                label: format!("{}, {ranks} ranks ({rpn} per node)", op.id()),
                color: i,
                measured: mine
                    .iter()
                    .map(|r| (r.sample.bytes, r.measured_busbw_bytes_per_s))
                    .collect(),
                fitted: curve(fitted),
                preset: curve(assumed),
            }
        })
        .collect()
}

fn head_markup(name: &str, kind: &str, gpu: &GpuSpec, gpu_note: &str, notes: &[String]) -> String {
    let peak_tflops = gpu.bf16_flops_per_s / 1e12;
    let mut out = format!(
        r#"<h3>From {} ({})</h3><ul class="hint bench-notes" data-testid="bench-notes"><li>GEMM rates are relative to the {} BF16 peak, {} TFLOP/s ({}).</li>"#,
        html(name),
        html(kind),
        html(&gpu.name),
        sig3(peak_tflops),
        html(gpu_note)
    );
    for n in notes {
        let _ = write!(out, "<li>{}</li>", html(n));
    }
    out.push_str("</ul>");
    out
}

fn comm_markup(comm: &[CommComparison]) -> String {
    if comm.is_empty() {
        return String::new();
    }
    let n = comm.len();
    // Long nccl-tests tables start folded; the chart above shows them.
    let open = if n <= 8 { " open" } else { "" };
    let mut out = format!(
        r#"<details class="samples"{open}><summary>{n} measurement(s), with the fit and the preset at each size</summary><div class="table-scroll"><table class="data" data-testid="bench-collectives"><thead><tr><th>collective</th><th class="num">ranks</th><th class="num">size</th><th class="num">time</th><th class="num">bus bw, measured</th><th class="num">fit</th><th class="num">preset assumption</th></tr></thead><tbody>"#
    );
    for c in comm {
        let s = c.sample;
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td class="num">{} ({}/node)</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            html(s.op.id()),
            s.ranks,
            s.ranks_per_node,
            bytes(s.bytes),
            seconds(s.time_s),
            bytes_per_s(c.measured_busbw_bytes_per_s),
            bytes_per_s(c.fitted_busbw_bytes_per_s),
            bytes_per_s(c.assumed_busbw_bytes_per_s),
        );
    }
    out.push_str("</tbody></table></div></details>");
    out
}

fn gemm_markup(gemm: &[GemmComparison], gpu: &GpuSpec) -> String {
    if gemm.is_empty() {
        return String::new();
    }
    let peak_tflops = gpu.bf16_flops_per_s / 1e12;
    let mut out = String::from(
        r#"<h4>GEMM rate against peak</h4><div class="table-scroll"><table class="data" data-testid="bench-gemms"><thead><tr><th>m × n × k</th><th class="num">TFLOP/s</th><th class="num">peak</th><th class="num">of peak</th><th class="num">fit</th><th class="num">assumed</th></tr></thead><tbody>"#,
    );
    for g in gemm {
        let s = g.sample;
        let _ = write!(
            out,
            r#"<tr><td>{} × {} × {}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            s.m,
            s.n,
            s.k,
            sig3(s.flops_per_s / 1e12),
            sig3(peak_tflops),
            percent(g.measured_fraction),
            g.fitted_fraction.map_or("—".into(), percent),
            percent(g.assumed_fraction),
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

fn steps_markup(steps: &[LayerStepCheck]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        r#"<h4>Measured layer steps: predicted / measured</h4><div class="table-scroll"><table class="data" data-testid="bench-layer-steps"><thead><tr><th>step</th><th class="num">compute</th><th class="num">communication</th><th class="num">sequential</th><th class="num">error</th></tr></thead><tbody>"#,
    );
    for c in steps {
        let (p, m) = (c.predicted, c.measured);
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td class="num">{} / {}</td><td class="num">{} / {}</td><td class="num">{} / {}</td><td class="num" data-testid="layer-step-error">{}</td></tr>"#,
            html(&c.label),
            seconds(p.compute_s),
            seconds(m.compute_s),
            seconds(p.comm_s),
            seconds(m.comm_s),
            seconds(p.sequential_s),
            seconds(m.sequential_s),
            signed_percent(c.sequential_error()),
        );
    }
    out.push_str(r#"</tbody></table></div><p class="hint">Predicted with the fitted links and GEMM curve on the step's own shapes (planner_core::edges::layer_step); error = (predicted − measured) ÷ measured of the sequential step.</p>"#);
    out
}
