//! The one list of a decoder layer's linears (`input::layer_ops`) against the parameter
//! breakdown, which counts the same weights from the model's shapes on its own.

use planner_core::input::finetune::LoraTargets;
use planner_core::input::layer_ops::{layer_ops, Owner};
use planner_core::resolve::presets::model_presets;

/// `Σ d_in·d_out` of the weights one layer holds of `owner`.
fn weights(model: &planner_core::input::model::ModelSpec, moe: bool, owner: Owner) -> u64 {
    layer_ops(model, moe)
        .of(owner)
        .map(|op| (op.d_in * op.d_out * op.instances) as u64)
        .sum()
}

#[test]
fn every_preset_layer_lists_the_weights_the_breakdown_counts() {
    for preset in model_presets() {
        let m = &preset.spec;
        let pb = m.param_breakdown();
        // Biases and MLA's latent norms are parameters but not GEMM weights.
        if m.linear_bias || m.qkv_bias || m.mla.is_some() {
            continue;
        }
        let id = preset.id;
        assert_eq!(
            weights(m, false, Owner::Attention),
            pb.attention_per_layer,
            "{id} attention"
        );
        assert_eq!(
            weights(m, false, Owner::DenseFfn),
            pb.dense_ffn_per_layer,
            "{id} ffn"
        );
        if m.moe.is_some() {
            let shared = weights(m, true, Owner::SharedExpert);
            let routed = weights(m, true, Owner::RoutedExpert);
            assert_eq!(shared, pb.shared_experts_per_layer, "{id} shared experts");
            assert_eq!(routed, pb.routed_experts_per_layer, "{id} routed experts");
        }
    }
}

#[test]
fn a_llama_layer_runs_seven_linears_in_order() {
    let model = model_presets()
        .into_iter()
        .find(|p| p.id == "llama-3.1-8b")
        .map(|p| p.spec)
        .expect("the Llama 3.1 8B preset");
    let names: Vec<_> = layer_ops(&model, false).iter().map(|o| o.name).collect();
    assert_eq!(names, LoraTargets::PEFT_NAMES);
}

#[test]
fn an_mla_layer_runs_its_latent_projections_and_k_or_v_adapts_both_kv_linears() {
    let model = model_presets()
        .into_iter()
        .find(|p| p.spec.mla.as_ref().is_some_and(|m| m.q_lora_rank > 0))
        .map(|p| p.spec)
        .expect("an MLA preset with a query latent");
    let ops = layer_ops(&model, false);
    let names: Vec<_> = ops.of(Owner::Attention).map(|o| o.name).collect();
    assert_eq!(
        names,
        [
            "q_a_proj",
            "q_b_proj",
            "kv_a_proj_with_mqa",
            "kv_b_proj",
            "o_proj"
        ]
    );
    let k_only = LoraTargets::parse("k").expect("a target list");
    let adapted: Vec<_> = ops
        .iter()
        .filter(|o| o.targeted_by(&k_only))
        .map(|o| o.name)
        .collect();
    assert_eq!(adapted, ["kv_a_proj_with_mqa", "kv_b_proj"]);
}
