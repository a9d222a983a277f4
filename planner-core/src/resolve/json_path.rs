//! Where each value [`Scenario::validate`](crate::input::scenario::Scenario::validate)
//! checks sits in a scenario file. Validation names the share-link parameter
//! (`gpu_mem`), the name a link and the page's controls use; an error found while
//! reading a file is renamed here to the JSON path the person wrote
//! (`cluster.gpu.memory_bytes`).

use crate::resolve::validate::FieldError;

/// Each link parameter [`Scenario::validate`](crate::input::scenario::Scenario::validate)
/// may name, with its JSON path in a scenario file. A parameter that stands for several
/// values names the object that holds them (`serve_profile`: `serving.engine_profile`);
/// one that follows from two (`gpus` = nodes × GPUs per node) names the one a file sets
/// alone.
pub const JSON_PATHS: &[(&str, &str)] = &[
    ("v", "version"),
    ("model", "model.preset"),
    // A custom model's shapes (`check_model`).
    ("name", "model.custom.name"),
    ("layers", "model.custom.layers"),
    ("hidden", "model.custom.hidden"),
    ("heads", "model.custom.heads"),
    ("kv_heads", "model.custom.kv_heads"),
    ("head_dim", "model.custom.head_dim"),
    ("ffn", "model.custom.ffn"),
    ("vocab", "model.custom.vocab"),
    ("pos", "model.custom.learned_positions"),
    ("experts", "model.custom.moe.routed_experts"),
    ("topk", "model.custom.moe.experts_per_token"),
    ("shared", "model.custom.moe.shared_experts"),
    ("expert_ffn", "model.custom.moe.expert_ffn"),
    ("dense_layers", "model.custom.moe.dense_layers"),
    ("q_lora", "model.custom.mla.q_lora_rank"),
    ("kv_lora", "model.custom.mla.kv_lora_rank"),
    ("rope_dim", "model.custom.mla.qk_rope_head_dim"),
    ("nope_dim", "model.custom.mla.qk_nope_head_dim"),
    ("v_dim", "model.custom.mla.v_head_dim"),
    ("window", "model.custom.attention_window.window_tokens"),
    ("full_every", "model.custom.attention_window.full_every"),
    ("mtp", "model.custom.mtp_layers"),
    ("psi", "model.custom.nominal_params"),
    // Precision.
    ("weight_bytes", "precision.weight_bytes"),
    ("grad_bytes", "precision.grad_bytes"),
    ("master_bytes", "precision.master_bytes"),
    ("optim_bytes", "precision.optimizer_bytes"),
    ("act_bytes", "precision.activation_bytes"),
    // Cluster, its GPU and host.
    ("gpu", "cluster.gpu.id"),
    ("gpu_name", "cluster.gpu.name"),
    ("gpu_mem", "cluster.gpu.memory_bytes"),
    ("gpu_mem_datasheet", "cluster.gpu.datasheet_memory_bytes"),
    ("gpu_hbm", "cluster.gpu.hbm_bytes_per_s"),
    ("gpu_bf16", "cluster.gpu.bf16_flops_per_s"),
    ("gpu_fp8", "cluster.gpu.fp8_flops_per_s"),
    ("gpu_nvlink", "cluster.gpu.intra_node_bytes_per_s"),
    ("gpu_net", "cluster.gpu.inter_node_bytes_per_s"),
    ("gpu_gpn", "cluster.gpu.gpus_per_node"),
    ("gpn", "cluster.gpus_per_node"),
    ("gpus", "cluster.nodes"),
    ("nvlink_bw", "cluster.intra_node.bytes_per_s"),
    ("nvlink_lat", "cluster.intra_node.latency_s"),
    ("net_bw", "cluster.inter_node.bytes_per_s"),
    ("net_lat", "cluster.inter_node.latency_s"),
    ("host_ram", "cluster.host.ram_bytes"),
    ("host_nvme", "cluster.host.nvme_bytes"),
    ("host_nvme_read", "cluster.host.nvme_read_bytes_per_s"),
    ("host_nvme_write", "cluster.host.nvme_write_bytes_per_s"),
    ("host_link", "cluster.host.host_link_bytes_per_s"),
    ("host_cores", "cluster.host.cpu_cores"),
    // Training.
    ("seq", "training.seq_len"),
    ("gbs", "training.global_batch"),
    ("lora_r", "training.finetune.lora.rank"),
    ("lora_alpha", "training.finetune.lora.alpha"),
    ("vtok", "training.finetune.virtual_tokens"),
    ("lora_mod", "training.finetune.lora.targets"),
    // Layout.
    ("dp", "layout.dp"),
    ("tp", "layout.tp"),
    ("pp", "layout.pp"),
    ("cp", "layout.cp"),
    ("ep", "layout.ep"),
    ("etp", "layout.expert_tp"),
    ("vpp", "layout.virtual_stages"),
    ("split", "layout.stage_split"),
    ("mbs", "layout.micro_batch"),
    // Overheads and MoE routing.
    ("cuda_ctx", "overheads.cuda_context_bytes"),
    ("nccl_buf", "overheads.nccl_buffer_bytes_per_group"),
    ("cublas_ws", "overheads.cublas_workspace_bytes"),
    ("bucket", "overheads.gradient_bucket_bytes"),
    ("z3_units", "overheads.zero3_units_in_flight"),
    ("frag", "overheads.allocator_fraction"),
    ("usable", "overheads.usable_fraction"),
    ("moe_cf", "overheads.moe_routing.capacity_factor"),
    ("moe_pad", "overheads.moe_routing.pad_to_capacity"),
    ("moe_load", "overheads.moe_routing.measured_busiest_load"),
    // Serving.
    ("serve_ctx", "serving.context_len"),
    ("serve_conc", "serving.target_concurrency"),
    ("serve_tp", "serving.tp"),
    ("serve_pp", "serving.pp"),
    ("serve_util", "serving.memory_utilization"),
    ("serve_ws", "serving.workspace_bytes"),
    ("serve_memfrac", "serving.mem_fraction_static"),
    ("serve_profile", "serving.engine_profile"),
    ("serve_maxseqs", "serving.max_running_seqs"),
    ("cal", "calibration.summary"),
    // The run's bill.
    ("bill_tok", "bill.tokens"),
    ("bill_steps", "bill.steps"),
    ("bill_usd_h", "bill.usd_per_gpu_hour"),
    ("bill_capex", "bill.capex_usd_per_gpu"),
    ("bill_years", "bill.amortisation_years"),
    ("bill_kwh", "bill.usd_per_kwh"),
    ("bill_pue", "bill.pue"),
    ("bill_node_w", "bill.node_overhead_w"),
    ("bill_board_w", "bill.board_power_w"),
    ("bill_ckpt_gbs", "bill.checkpoint_write_gb_s_per_node"),
    ("bill_restart_s", "bill.restart_s"),
    ("bill_fail", "bill.failures_per_gpu_hour"),
    ("bill_days", "bill.goals.deadline_days"),
    ("bill_budget", "bill.goals.budget_usd"),
    ("bill_nodes", "bill.goals.node_counts"),
    ("fleet_rps", "bill.goals.rate_rps"),
    ("fleet_ttft_ms", "bill.goals.ttft_ms"),
    ("fleet_tpot_ms", "bill.goals.tpot_ms"),
    ("fleet_gpus", "bill.goals.fleet_gpus"),
];

/// The JSON path of link parameter `key` in a scenario file, if it names one.
pub fn json_path(key: &str) -> Option<&'static str> {
    JSON_PATHS
        .iter()
        .find(|(link_key, _)| *link_key == key)
        .map(|(_, path)| *path)
}

/// `error` named by its JSON path; unchanged when its field has none (it already is one).
pub fn to_json_path(error: FieldError) -> FieldError {
    match json_path(&error.field) {
        Some(path) => FieldError {
            field: path.to_string(),
            message: error.message,
        },
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_link_key_has_one_path_and_paths_are_distinct() {
        for (i, (key, path)) in JSON_PATHS.iter().enumerate() {
            assert_eq!(json_path(key), Some(*path));
            let later = &JSON_PATHS[i + 1..];
            assert!(later.iter().all(|(k, _)| k != key), "{key} twice");
            assert!(later.iter().all(|(_, p)| p != path), "{path} twice");
        }
        assert_eq!(json_path("layout.tp"), None);
    }

    #[test]
    fn an_error_keeps_its_message_and_takes_the_path() {
        let renamed = to_json_path(FieldError::new("moe_cf", "0 is outside (0, 64]"));
        assert_eq!(renamed.field, "overheads.moe_routing.capacity_factor");
        assert_eq!(renamed.message, "0 is outside (0, 64]");
        let kept = to_json_path(FieldError::new("training.seq_len", "bad"));
        assert_eq!(kept.field, "training.seq_len");
    }
}
