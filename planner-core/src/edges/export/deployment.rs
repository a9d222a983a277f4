//! A serving deployment from the deployment search as vLLM or SGLang flags, disaggregated pools included.

use super::sglang::sglang_parts;
use super::vllm::vllm_parts;
use super::*;

/// The launch commands of a serving deployment found by
/// [`serve_search`](crate::search::deployment::serve_search): one engine command per pool, with
/// the deployment's TP, PP, batch (`concurrency`), prefill chunk, expert parallelism and,
/// for disaggregated pools, the engine's KV-transfer settings. `None` for training formats.
pub fn deployment_export(
    format: ExportFormat,
    scenario: &Scenario,
    model: &ModelSpec,
    deployment: &Deployment,
    prefill_chunk_tokens: u32,
) -> Option<Export> {
    let parts_of = match format {
        ExportFormat::Vllm => vllm_parts,
        ExportFormat::Sglang => sglang_parts,
        _ => return None,
    };
    let shaped = |tp: u32, pp: u32| {
        let mut s = scenario.clone();
        s.serving.tp = tp;
        s.serving.pp = pp;
        s.serving.target_concurrency = deployment.concurrency;
        s
    };
    let ep = deployment.expert_parallel && model.moe.is_some();
    let mut out = String::new();
    let mut notes = Vec::new();
    let pools: Vec<(Option<&str>, u32, u32, u32)> = match deployment.pools {
        Pools::Aggregated { tp, pp, replicas } => vec![(None, tp, pp, replicas)],
        Pools::Disaggregated(d) => vec![
            (
                Some("prefill"),
                d.prefill.tp,
                d.prefill.pp,
                d.prefill.replicas,
            ),
            (Some("decode"), d.decode.tp, d.decode.pp, d.decode.replicas),
        ],
    };
    for (role, tp, pp, replicas) in pools {
        let s = shaped(tp, pp);
        let ctx = Ctx::new(&s, model);
        let (mut parts, pool_notes) = parts_of(&ctx);
        parts.extend(deployment_flags(format, role, tp, ep, prefill_chunk_tokens));
        if notes.is_empty() {
            notes = pool_notes;
            if let Some(n) = &ctx.identity.note {
                notes.insert(0, n.clone());
            }
        }
        let what = role.map_or_else(|| "replica".to_string(), |r| format!("{r} instance"));
        let _ = writeln!(
            out,
            "# {what}: run {replicas} of these, TP {tp} × PP {pp} = {} GPUs each",
            u64::from(tp) * u64::from(pp)
        );
        shell_line(&mut out, &parts);
    }
    notes.push(match (format, deployment.pools) {
        (_, Pools::Aggregated { replicas, .. }) => format!(
            "{replicas} independent replicas: put a load balancer in front; each holds \
             {} requests at once (--max-num-seqs / --max-running-requests).",
            deployment.concurrency
        ),
        (ExportFormat::Vllm, _) => "vLLM disaggregated prefill (docs/features/disagg_prefill.md, \
             nixl_connector_usage.md): every instance runs NixlConnector with kv_role kv_both; \
             a proxy sends each request to a prefill instance with max_tokens 1, then to a decode \
             instance (examples/disaggregated/ toy_proxy_server.py). vLLM marks the feature \
             experimental."
            .to_string(),
        _ => "SGLang PD disaggregation (docs/advanced_features/pd_disaggregation.md): start the \
             router over the instances, python -m sglang_router.launch_router --pd-disaggregation \
             --prefill http://PREFILL_HOST:30000 --decode http://DECODE_HOST:30001; the \
             mooncake backend moves the KV over RDMA (--disaggregation-ib-device names the NICs)."
            .to_string(),
    });
    Some(Export {
        id: format.id(),
        label: format.label(),
        file_name: format.file_name(),
        language: format.language(),
        text: out,
        notes,
    })
}

// vLLM: vllm/engine/arg_utils.py EngineArgs (--max-num-batched-tokens, the chunked-prefill budget;
// --enable-expert-parallel; --kv-transfer-config with vllm/config/kv_transfer.py KVTransferConfig).
// SGLang: python/sglang/srt/server_args.py ServerArgs (--chunked-prefill-size, --ep-size,
// --disaggregation-mode prefill|decode, --disaggregation-transfer-backend, default mooncake,
// --disaggregation-bootstrap-port, default 8998).
pub(super) fn deployment_flags(
    format: ExportFormat,
    role: Option<&str>,
    tp: u32,
    ep: bool,
    chunk_tokens: u32,
) -> Vec<String> {
    let mut v = Vec::new();
    if format == ExportFormat::Vllm {
        v.push(format!("--max-num-batched-tokens {chunk_tokens}"));
        if ep {
            v.push("--enable-expert-parallel".to_string());
        }
        if let Some(r) = role {
            v.push(format!(
                "--port {}",
                if r == "prefill" { 8100 } else { 8200 }
            ));
            v.push(format!(
                "--kv-transfer-config {}",
                shell_word(r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#)
            ));
        }
    } else {
        v.push(format!("--chunked-prefill-size {chunk_tokens}"));
        if ep {
            v.push(format!("--ep-size {tp}"));
        }
        if let Some(r) = role {
            let (mode, port) = if r == "prefill" {
                ("prefill", 30000)
            } else {
                ("decode", 30001)
            };
            v.push(format!("--port {port}"));
            v.push(format!("--disaggregation-mode {mode}"));
            v.push("--disaggregation-transfer-backend mooncake".to_string());
            if mode == "prefill" {
                v.push("--disaggregation-bootstrap-port 8998".to_string());
            }
        }
    }
    v
}
