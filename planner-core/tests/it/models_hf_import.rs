//! Hugging Face config.json import: fixtures from published configs, and errors.

use planner_core::edges::hf_config::{import_hf_config, ImportError};
use planner_core::input::model::ModelSpec;
use planner_core::resolve::presets::model_preset;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/hf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn import(name: &str) -> ModelSpec {
    import_hf_config(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn imported_shapes_equal_the_presets() {
    for id in [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "qwen2.5-72b",
        "deepseek-v3",
        "qwen3-8b",
        "qwen3-30b-a3b",
    ] {
        let mut imported = import(id);
        let preset = model_preset(id).unwrap();
        assert_eq!(
            imported.name,
            "Imported ".to_string() + imported.name.trim_start_matches("Imported ")
        );
        imported.name = preset.name.clone();
        assert_eq!(imported, preset, "{id}");
    }
}

#[test]
fn architectures_without_a_preset() {
    // Mistral 7B v0.1: 7.24B parameters (model card "7.3B"; safetensors 7,241,732,096).
    let m = import("mistral-7b-v0.1");
    assert_eq!(m.param_breakdown().total(), 7_241_732_096);

    // Qwen3-8B: explicit head_dim 128, untied, model card "8.2B".
    let q = import("qwen3-8b");
    assert_eq!((q.head_dim, q.kv_heads, q.tied_embeddings), (128, 8, false));
    assert!(!q.qkv_bias);
    let err = (q.params() - 8.2e9).abs() / 8.2e9;
    assert!(err < 0.005, "qwen3-8b {}", q.params());

    // Qwen3-30B-A3B: 128 experts of width 768, top-8; model card 30.5B total, 3.3B active.
    let moe = import("qwen3-30b-a3b");
    let spec = moe.moe.as_ref().unwrap();
    assert_eq!(
        (spec.routed_experts, spec.experts_per_token, spec.expert_ffn),
        (128, 8, 768)
    );
    assert!(
        (moe.params() - 30.5e9).abs() / 30.5e9 < 0.005,
        "{}",
        moe.params()
    );
    assert!(
        (moe.active_params() - 3.3e9).abs() / 3.3e9 < 0.02,
        "{}",
        moe.active_params()
    );
}

#[test]
fn name_comes_from_name_or_path() {
    let json = fixture("llama-3.1-8b").replacen(
        "{",
        "{\"_name_or_path\": \"meta-llama/Llama-3.1-8B\",",
        1,
    );
    assert_eq!(import_hf_config(&json).unwrap().name, "Llama-3.1-8B");
}

#[test]
fn missing_field_is_named() {
    let json = fixture("llama-3.1-8b").replace("\"num_hidden_layers\": 32,", "");
    let err = import_hf_config(&json).unwrap_err();
    assert_eq!(err, ImportError::MissingField("num_hidden_layers".into()));
    assert!(err.to_string().contains("`num_hidden_layers`"), "{err}");
}

#[test]
fn ill_typed_field_is_named() {
    let json =
        fixture("mixtral-8x7b").replace("\"num_local_experts\": 8", "\"num_local_experts\": \"8\"");
    match import_hf_config(&json).unwrap_err() {
        ImportError::InvalidField { field, found, .. } => {
            assert_eq!(field, "num_local_experts");
            assert_eq!(found, "\"8\"");
        }
        other => panic!("{other:?}"),
    }
    let json = fixture("llama-3.1-8b").replace("\"hidden_size\": 4096", "\"hidden_size\": -1");
    assert!(
        matches!(import_hf_config(&json), Err(ImportError::InvalidField { field, .. }) if field == "hidden_size")
    );
    let json = fixture("llama-3.1-8b")
        .replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 64");
    assert!(
        matches!(import_hf_config(&json), Err(ImportError::UnsupportedSetting { field, .. }) if field == "num_key_value_heads")
    );
}

#[test]
fn query_heads_not_a_multiple_of_kv_heads_is_refused_naming_both_keys() {
    // 32 query heads over 7 KV heads: 32 / 7 is no whole group (issue 43 §5).
    let json =
        fixture("llama-3.1-8b").replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 7");
    match import_hf_config(&json).unwrap_err() {
        ImportError::UnsupportedSetting { field, message } => {
            assert_eq!(field, "num_key_value_heads");
            assert!(
                message.contains("num_attention_heads (32)")
                    && message.contains("num_key_value_heads (7)"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // 32 over 4 is a whole group of 8: still accepted.
    let json =
        fixture("llama-3.1-8b").replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 4");
    assert_eq!(import_hf_config(&json).map(|m| m.kv_heads), Ok(4));
}

#[test]
fn unsupported_architecture_is_named() {
    let json = r#"{"architectures": ["GPT2LMHeadModel"], "n_layer": 12, "n_embd": 768}"#;
    let err = import_hf_config(json).unwrap_err();
    // GPT-2's keys are its own (n_layer, n_embd): named as the fields no mapping reads.
    assert_eq!(
        err,
        ImportError::UnsupportedArchitecture {
            architecture: "GPT2LMHeadModel".into(),
            unmapped: vec!["n_embd".into(), "n_layer".into()],
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("GPT2LMHeadModel")
            && msg.contains("LlamaForCausalLM")
            && msg.contains("fields it could not map: n_embd, n_layer"),
        "{msg}"
    );
}

#[test]
fn not_json_and_not_an_object() {
    assert!(matches!(
        import_hf_config("{\"architectures\": [}"),
        Err(ImportError::NotJson(_))
    ));
    assert!(matches!(
        import_hf_config("hello"),
        Err(ImportError::NotJson(_))
    ));
    assert_eq!(import_hf_config("[1, 2]"), Err(ImportError::NotAnObject));
    assert_eq!(
        import_hf_config("{}"),
        Err(ImportError::MissingField("architectures".into()))
    );
}

#[test]
fn unsupported_settings_are_named() {
    let json =
        fixture("qwen3-30b-a3b").replace("\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 1]");
    assert!(
        matches!(import_hf_config(&json), Err(ImportError::UnsupportedSetting { field, .. }) if field == "mlp_only_layers")
    );
    let json =
        fixture("llama-3.1-8b").replace("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"");
    assert!(
        matches!(import_hf_config(&json), Err(ImportError::UnsupportedSetting { field, .. }) if field == "hidden_act")
    );
}

#[test]
fn importer_never_panics_on_mangled_configs() {
    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;
    let base = fixture("deepseek-v3");
    let mut runner = TestRunner::default();
    runner
        .run(
            &(any::<proptest::sample::Index>(), 0u8..3, any::<u8>()),
            |(at, op, b)| {
                let mut bytes = base.clone().into_bytes();
                let i = at.index(bytes.len());
                match op {
                    0 => bytes[i] = b,
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes.insert(i, b),
                }
                let _ = import_hf_config(&String::from_utf8_lossy(&bytes));
                Ok(())
            },
        )
        .unwrap();
}
