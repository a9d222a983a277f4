//! A Hub model from its config.json and safetensors headers (`edges::hub`): exact counts per
//! tensor class on each supported architecture, what the headers change, quantized tensors
//! with their scales, and the edge's refusals.
//!
//! The configs are the published `config.json`s (fixtures in tests/fixtures/hf, or inline);
//! the headers are written here tensor by tensor from the published checkpoints' tensor names
//! and shapes (`Ckpt`), so a whole 671B model's header is a few lines of fixture code.

use planner_core::edges::hf_config::ImportError;
use planner_core::edges::hub::classify::TensorClass;
use planner_core::edges::hub::safetensors::{
    header_bytes, header_length, parse_header, parse_index, Dtype, ShardHeader, MAX_HEADER_BYTES,
};
use planner_core::edges::hub::{file_url, hub_model, parse_hub_id, HubError, HubFiles, HubModel};
use planner_core::input::number_format::NumberFormat;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/hf/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A checkpoint's tensor list, written as its safetensors headers.
#[derive(Default)]
struct Ckpt {
    tensors: Vec<(String, &'static str, Vec<u64>)>,
}

impl Ckpt {
    fn add(&mut self, name: impl Into<String>, dtype: &'static str, shape: &[u64]) {
        self.tensors.push((name.into(), dtype, shape.to_vec()));
    }

    /// A linear layer's weight `[out, in]`; in FP8 with its 128 × 128 block scales
    /// (DeepSeek-V3's `weight_scale_inv`, F32 `[⌈out/128⌉, ⌈in/128⌉]`).
    fn linear(&mut self, name: &str, out: u64, inp: u64, fp8: bool) {
        if fp8 {
            self.add(format!("{name}.weight"), "F8_E4M3", &[out, inp]);
            self.add(
                format!("{name}.weight_scale_inv"),
                "F32",
                &[out.div_ceil(128), inp.div_ceil(128)],
            );
        } else {
            self.add(format!("{name}.weight"), "BF16", &[out, inp]);
        }
    }

    /// Headers of `shards` files, read back the way a fetch reads them.
    fn headers(&self, shards: usize) -> Vec<ShardHeader> {
        let per = self.tensors.len().div_ceil(shards);
        self.tensors
            .chunks(per)
            .enumerate()
            .map(|(i, chunk)| {
                let file = format!("model-{:05}-of-{shards:05}.safetensors", i + 1);
                let typed: Vec<(String, Dtype, Vec<u64>)> = chunk
                    .iter()
                    .map(|(n, d, s)| (n.clone(), Dtype::parse(d).expect("dtype"), s.clone()))
                    .collect();
                let bytes = header_bytes(&typed);
                let n = header_length(&file, &bytes[..8]).expect("length");
                parse_header(&file, &bytes[8..8 + n as usize]).expect("header")
            })
            .collect()
    }
}

fn model(repo: &str, config: &str, quant: Option<&str>, ckpt: &Ckpt) -> HubModel {
    let shards = ckpt.headers(4);
    hub_model(&HubFiles {
        repo,
        config,
        hf_quant_config: quant,
        shards: &shards,
    })
    .unwrap_or_else(|e| panic!("{repo}: {e}"))
}

fn class(m: &HubModel, c: TensorClass) -> (u64, u64, u64) {
    m.classes
        .iter()
        .find(|t| t.class == c)
        .map_or((0, 0, 0), |t| (t.params, t.weight_bytes, t.scale_bytes))
}

/// Llama / Mistral / Qwen3 dense layers (`model.layers.i.…`): q/k/v/o, gate/up/down, two norms.
fn llama_layers(c: &mut Ckpt, prefix: &str, l: u64, h: u64, q: u64, kv: u64, ffn: u64) {
    for i in 0..l {
        let p = format!("{prefix}layers.{i}");
        c.linear(&format!("{p}.self_attn.q_proj"), q, h, false);
        c.linear(&format!("{p}.self_attn.k_proj"), kv, h, false);
        c.linear(&format!("{p}.self_attn.v_proj"), kv, h, false);
        c.linear(&format!("{p}.self_attn.o_proj"), h, q, false);
        if ffn > 0 {
            c.linear(&format!("{p}.mlp.gate_proj"), ffn, h, false);
            c.linear(&format!("{p}.mlp.up_proj"), ffn, h, false);
            c.linear(&format!("{p}.mlp.down_proj"), h, ffn, false);
        }
        c.add(format!("{p}.input_layernorm.weight"), "BF16", &[h]);
        c.add(format!("{p}.post_attention_layernorm.weight"), "BF16", &[h]);
    }
}

fn ends(c: &mut Ckpt, prefix: &str, v: u64, h: u64, head: bool) {
    c.add(format!("{prefix}embed_tokens.weight"), "BF16", &[v, h]);
    c.add(format!("{prefix}norm.weight"), "BF16", &[h]);
    if head {
        c.add("lm_head.weight", "BF16", &[v, h]);
    }
}

#[test]
fn llama_3_2_1b_is_tied_by_its_headers() {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
      "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64,
      "vocab_size": 128256, "tie_word_embeddings": true, "hidden_act": "silu"}"#;
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 128_256, 2048, false);
    llama_layers(&mut c, "model.", 16, 2048, 2048, 512, 8192);
    let m = model("meta-llama/Llama-3.2-1B", config, None, &c);
    // Embedding 128,256 × 2,048 = 262,668,288; per layer q, o 2,048² each, k, v 512 × 2,048
    // each (10,485,760), FFN 3 × 2,048 × 8,192 = 50,331,648, norms 4,096: 60,821,504 × 16 =
    // 973,144,064; + final norm 2,048 = 1,235,814,400 (HF "1.24B").
    assert_eq!(m.model_params, 1_235_814_400);
    assert_eq!(m.config_params, m.model_params);
    assert!(m.spec.tied_embeddings);
    assert_eq!(class(&m, TensorClass::Output), (0, 0, 0));
    assert_eq!(m.spec.name, "Llama-3.2-1B");
    assert_eq!(m.spec.params(), 1_235_814_400.0);
    // A config that says untied is corrected by the headers, and the page is told.
    let untied = config.replace(
        "\"tie_word_embeddings\": true",
        "\"tie_word_embeddings\": false",
    );
    let m = model("meta-llama/Llama-3.2-1B", &untied, None, &c);
    assert!(m.spec.tied_embeddings);
    assert_eq!(m.config_params - m.model_params, 262_668_288);
    assert!(
        m.notes.iter().any(|n| n.contains("tie_word_embeddings")),
        "{:?}",
        m.notes
    );
}

#[test]
fn qwen3_dense_and_moe_count_their_qk_norms() {
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 151_936, 4096, true);
    llama_layers(&mut c, "model.", 36, 4096, 4096, 1024, 12_288);
    for i in 0..36 {
        c.add(
            format!("model.layers.{i}.self_attn.q_norm.weight"),
            "BF16",
            &[128],
        );
        c.add(
            format!("model.layers.{i}.self_attn.k_norm.weight"),
            "BF16",
            &[128],
        );
    }
    let m = model("Qwen/Qwen3-8B", &fixture("qwen3-8b"), None, &c);
    // Untied 2 × 151,936 × 4,096 = 1,244,659,712; per layer 41,943,040 attention +
    // 150,994,944 FFN + 8,192 norms = 192,946,176, × 36 = 6,946,062,336; + 4,096 final norm
    // = 8,190,726,144 from the config; the q/k norms add 36 × 2 × 128 = 9,216.
    assert_eq!(m.config_params, 8_190_726_144);
    assert_eq!(m.model_params, 8_190_735_360);
    assert_eq!(
        class(&m, TensorClass::Norms).0,
        36 * (2 * 4096 + 256) + 4096
    );

    let mut c = Ckpt::default();
    ends(&mut c, "model.", 151_936, 2048, true);
    llama_layers(&mut c, "model.", 48, 2048, 4096, 512, 0);
    for i in 0..48 {
        let p = format!("model.layers.{i}");
        c.add(format!("{p}.self_attn.q_norm.weight"), "BF16", &[128]);
        c.add(format!("{p}.self_attn.k_norm.weight"), "BF16", &[128]);
        c.add(format!("{p}.mlp.gate.weight"), "BF16", &[128, 2048]);
        for e in 0..128 {
            c.linear(&format!("{p}.mlp.experts.{e}.gate_proj"), 768, 2048, false);
            c.linear(&format!("{p}.mlp.experts.{e}.up_proj"), 768, 2048, false);
            c.linear(&format!("{p}.mlp.experts.{e}.down_proj"), 2048, 768, false);
        }
    }
    let m = model("Qwen/Qwen3-30B-A3B", &fixture("qwen3-30b-a3b"), None, &c);
    // Per layer 18,874,368 attention + 256 q/k norms + 128 × 3 × 2,048 × 768 = 603,979,776
    // experts + 262,144 router + 4,096 norms = 623,120,640; × 48 + 622,329,856 + 2,048 =
    // 30,532,122,624 (HF "30.5B").
    assert_eq!(m.model_params, 30_532_122_624);
    assert_eq!(class(&m, TensorClass::RoutedExperts).0, 48 * 603_979_776);
    assert_eq!(class(&m, TensorClass::Router).0, 48 * 262_144);
    assert_eq!(m.config_params + 48 * 256, m.model_params);
}

/// DeepSeek-V3-class layers (MLA; dense FFN for the first `dense`, then shared + routed experts)
/// in FP8 with block scales, and `mtp` MTP modules past the last layer.
#[allow(clippy::too_many_arguments)]
fn deepseek(c: &mut Ckpt, l: u64, mtp: u64, heads: u64, experts: u64, dense: u64, v: u64) {
    let (h, ql, kvl, rope, nope, vd, ffn, mffn) = (7168, 1536, 512, 64, 128, 128, 18_432, 2048);
    ends(c, "model.", v, h, true);
    for i in 0..l + mtp {
        let p = format!("model.layers.{i}");
        let a = format!("{p}.self_attn");
        c.linear(&format!("{a}.q_a_proj"), ql, h, true);
        c.add(format!("{a}.q_a_layernorm.weight"), "BF16", &[ql]);
        c.linear(&format!("{a}.q_b_proj"), heads * (nope + rope), ql, true);
        c.linear(&format!("{a}.kv_a_proj_with_mqa"), kvl + rope, h, true);
        c.add(format!("{a}.kv_a_layernorm.weight"), "BF16", &[kvl]);
        c.linear(&format!("{a}.kv_b_proj"), heads * (nope + vd), kvl, true);
        c.linear(&format!("{a}.o_proj"), h, heads * vd, true);
        c.add(format!("{p}.input_layernorm.weight"), "BF16", &[h]);
        c.add(format!("{p}.post_attention_layernorm.weight"), "BF16", &[h]);
        if i < dense {
            c.linear(&format!("{p}.mlp.gate_proj"), ffn, h, true);
            c.linear(&format!("{p}.mlp.up_proj"), ffn, h, true);
            c.linear(&format!("{p}.mlp.down_proj"), h, ffn, true);
            continue;
        }
        c.add(format!("{p}.mlp.gate.weight"), "BF16", &[experts, h]);
        c.add(
            format!("{p}.mlp.gate.e_score_correction_bias"),
            "F32",
            &[experts],
        );
        for e in (0..experts)
            .map(|e| format!("experts.{e}"))
            .chain(["shared_experts".to_string()])
        {
            c.linear(&format!("{p}.mlp.{e}.gate_proj"), mffn, h, true);
            c.linear(&format!("{p}.mlp.{e}.up_proj"), mffn, h, true);
            c.linear(&format!("{p}.mlp.{e}.down_proj"), h, mffn, true);
        }
        if i >= l {
            // DeepSeek-V3's MTP module (modeling_deepseek / inference/model.py MTP layer):
            // its own copies of the embedding and head, enorm, hnorm, eh_proj, head norm.
            c.add(format!("{p}.embed_tokens.weight"), "BF16", &[v, h]);
            c.add(format!("{p}.enorm.weight"), "BF16", &[h]);
            c.add(format!("{p}.hnorm.weight"), "BF16", &[h]);
            c.add(format!("{p}.eh_proj.weight"), "BF16", &[h, 2 * h]);
            c.add(format!("{p}.shared_head.norm.weight"), "BF16", &[h]);
            c.add(format!("{p}.shared_head.head.weight"), "BF16", &[v, h]);
        }
    }
}

const FP8_BLOCK: &str = r#""quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]},"#;

#[test]
fn deepseek_v3_counts_its_mtp_module_and_fp8_block_scales() {
    let config = fixture("deepseek-v3").replacen('{', &format!("{{{FP8_BLOCK}"), 1);
    let mut c = Ckpt::default();
    deepseek(&mut c, 61, 1, 128, 256, 3, 129_280);
    let m = model("deepseek-ai/DeepSeek-V3", &config, None, &c);
    // Worked in Python from the shapes (MLA q 7,168 × 1,536 + 1,536 + 1,536 × 128 × 192; kv
    // 7,168 × 576 + 512 + 512 × 128 × 256; o 128 × 128 × 7,168; 3 dense FFNs of 18,432; 58
    // MoE layers of 257 experts of 3 × 7,168 × 2,048, router 256 × 7,168 and its 256 biases;
    // untied 129,280 × 7,168 twice): 671,026,419,200 in the main model, of which the router
    // biases 58 × 256 = 14,848 are what the config's shapes leave out. The MTP module: one
    // more MoE layer, eh_proj 7,168 × 14,336 and three norms = 11,610,068,224; its copies of
    // embedding and head, 2 × 129,280 × 7,168 = 1,853,358,080, are not counted again.
    assert_eq!(m.config_params, 671_026_404_352);
    assert_eq!(m.model_params, 671_026_419_200 + 11_610_068_224);
    assert_eq!(m.header_params, m.model_params + 1_853_358_080);
    assert_eq!(class(&m, TensorClass::MtpSharedCopy).0, 1_853_358_080);
    assert_eq!(m.spec.mtp_layers, 1);
    // The model card: 671B main model + 14B MTP weights (the copies included): within 0.5%.
    assert!(
        (m.header_params as f64 / 685e9 - 1.0).abs() < 0.005,
        "{}",
        m.header_params
    );
    // Every routed-expert matrix is a whole number of 128 × 128 blocks: one FP32 scale per
    // 16,384 FP8 bytes, exactly the block-scaled format's bytes per element.
    let experts = m
        .classes
        .iter()
        .find(|t| t.class == TensorClass::RoutedExperts)
        .expect("experts");
    let layout = NumberFormat::Fp8BlockWeight.layout();
    let spec_bytes = (layout.element_bits + layout.scale_bits / layout.block_elements) / 8.0;
    assert_eq!(experts.bytes_per_param(), spec_bytes);
    assert_eq!(experts.scale_bytes * 16_384 / 4, experts.weight_bytes);
    let q = m.quantization.as_ref().expect("quantization_config");
    assert_eq!((q.method.as_str(), q.element_bits), ("fp8", Some(8)));
    assert!(q.format.contains("128 × 128"), "{}", q.format);
}

#[test]
fn kimi_k2_is_a_deepseek_v3_class_moe() {
    let config = format!(
        r#"{{"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2", {FP8_BLOCK}
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
        "kv_lora_rank": 512, "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_routed_experts": 384,
        "n_shared_experts": 1, "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61,
        "num_key_value_heads": 64, "num_nextn_predict_layers": 0, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 163840, "tie_word_embeddings": false}}"#
    );
    let mut c = Ckpt::default();
    deepseek(&mut c, 61, 0, 64, 384, 1, 163_840);
    let m = model("moonshotai/Kimi-K2-Instruct", &config, None, &c);
    // As for DeepSeek-V3 with 64 heads, 384 experts, one dense layer, vocabulary 163,840:
    // 1,026,408,232,448, the router biases 60 × 384 = 23,040 of it (model card: 1T total).
    assert_eq!(m.model_params, 1_026_408_232_448);
    assert_eq!(m.config_params + 23_040, m.model_params);
    assert_eq!(m.spec.mtp_layers, 0);
    // 32B active (model card): within 3%.
    let active = m.spec.active_params();
    assert!((active / 32e9 - 1.0).abs() < 0.03, "{active}");
}

#[test]
fn gpt_oss_counts_mxfp4_experts_unpacked_with_their_scales() {
    let config = r#"{"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": true,
      "experts_per_token": 4, "num_experts_per_tok": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
      "intermediate_size": 2880, "num_attention_heads": 64, "num_hidden_layers": 24, "num_key_value_heads": 8,
      "num_local_experts": 32, "sliding_window": 128, "tie_word_embeddings": false, "vocab_size": 201088,
      "layer_types": ["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],
      "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}"#;
    let (h, e) = (2880u64, 32u64);
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 201_088, h, true);
    for i in 0..24 {
        let p = format!("model.layers.{i}");
        for (n, out, inp) in [
            ("q_proj", 4096, h),
            ("k_proj", 512, h),
            ("v_proj", 512, h),
            ("o_proj", h, 4096),
        ] {
            c.linear(&format!("{p}.self_attn.{n}"), out, inp, false);
            c.add(format!("{p}.self_attn.{n}.bias"), "BF16", &[out]);
        }
        c.add(format!("{p}.self_attn.sinks"), "BF16", &[64]);
        c.add(format!("{p}.mlp.router.weight"), "BF16", &[e, h]);
        c.add(format!("{p}.mlp.router.bias"), "BF16", &[e]);
        // transformers GptOssExperts as shipped: MXFP4 blocks of 32 E2M1 values in 16 bytes,
        // one E8M0 scale byte per block.
        c.add(
            format!("{p}.mlp.experts.gate_up_proj_blocks"),
            "U8",
            &[e, 2 * h, h / 32, 16],
        );
        c.add(
            format!("{p}.mlp.experts.gate_up_proj_scales"),
            "U8",
            &[e, 2 * h, h / 32],
        );
        c.add(
            format!("{p}.mlp.experts.gate_up_proj_bias"),
            "BF16",
            &[e, 2 * h],
        );
        c.add(
            format!("{p}.mlp.experts.down_proj_blocks"),
            "U8",
            &[e, h, h / 32, 16],
        );
        c.add(
            format!("{p}.mlp.experts.down_proj_scales"),
            "U8",
            &[e, h, h / 32],
        );
        c.add(format!("{p}.mlp.experts.down_proj_bias"), "BF16", &[e, h]);
        c.add(format!("{p}.input_layernorm.weight"), "BF16", &[h]);
        c.add(format!("{p}.post_attention_layernorm.weight"), "BF16", &[h]);
    }
    let m = model("openai/gpt-oss-20b", config, None, &c);
    // Per layer: attention 26,542,080 weights + 8,000 biases + 64 sinks; experts 32 × 5,760 ×
    // 2,880 + 32 × 2,880 × 2,880 = 796,262,400 unpacked + 276,480 biases; router 92,160 + 32;
    // norms 5,760: 823,186,976 × 24 + 2 × 201,088 × 2,880 + 2,880 = 20,914,757,184 ("21B").
    assert_eq!(m.model_params, 20_914_757_184);
    let (params, weight_bytes, scale_bytes) = class(&m, TensorClass::RoutedExperts);
    let packed = 24 * 796_262_400;
    assert_eq!(params, packed + 24 * 276_480);
    // Half a byte per E2M1 element plus the BF16 biases; one scale byte per 32 elements: the
    // MXFP4 layout's 4 + 8/32 bits per element.
    assert_eq!(weight_bytes, packed / 2 + 24 * 276_480 * 2);
    assert_eq!(scale_bytes, packed / 32);
    let l = NumberFormat::Mxfp4.layout();
    assert_eq!(
        (weight_bytes - 24 * 276_480 * 2 + scale_bytes) as f64 / packed as f64,
        (l.element_bits + l.scale_bits / l.block_elements) / 8.0
    );
    let w = m
        .spec
        .attention_window
        .as_ref()
        .expect("alternating window");
    assert_eq!((w.window_tokens, w.full_every), (128, 2));
    assert_eq!(
        m.quantization.as_ref().map(|q| q.method.as_str()),
        Some("mxfp4")
    );
    assert!(m.config_params < m.model_params);
}

#[test]
fn gemma_3_counts_its_four_norms_and_keeps_its_window() {
    let config = r#"{"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "head_dim": 256,
      "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "intermediate_size": 6912,
      "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "sliding_window": 512,
      "sliding_window_pattern": 6, "vocab_size": 262144, "rms_norm_eps": 1e-06}"#;
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 262_144, 1152, false);
    llama_layers(&mut c, "model.", 26, 1152, 1024, 256, 6912);
    for i in 0..26 {
        let p = format!("model.layers.{i}");
        c.add(
            format!("{p}.pre_feedforward_layernorm.weight"),
            "BF16",
            &[1152],
        );
        c.add(
            format!("{p}.post_feedforward_layernorm.weight"),
            "BF16",
            &[1152],
        );
        c.add(format!("{p}.self_attn.q_norm.weight"), "BF16", &[256]);
        c.add(format!("{p}.self_attn.k_norm.weight"), "BF16", &[256]);
    }
    let m = model("google/gemma-3-1b-it", config, None, &c);
    // Tied 262,144 × 1,152 = 301,989,888; per layer 2,949,120 attention + 23,887,872 GeGLU
    // FFN + 4 × 1,152 + 2 × 256 norms = 26,842,112, × 26 = 697,894,912; + 1,152: 999,885,952.
    // The config's shapes count two norms per layer: 26 × (2 × 1,152 + 512) = 73,216 fewer.
    assert_eq!(m.model_params, 999_885_952);
    assert_eq!(m.config_params, 999_885_952 - 73_216);
    let w = m.spec.attention_window.as_ref().expect("window");
    assert_eq!((w.window_tokens, w.full_every), (512, 6));
    assert!(m.spec.tied_embeddings);
}

#[test]
fn llama_4_scout_reads_its_text_config_and_leaves_the_vision_encoder_out() {
    let config = r#"{"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
      "text_config": {"model_type": "llama4_text", "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
        "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384, "interleave_moe_layer_step": 1,
        "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
        "num_local_experts": 16, "vocab_size": 202048, "tie_word_embeddings": false, "use_qk_norm": true},
      "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34}}"#;
    let (h, e) = (5120u64, 16u64);
    let mut c = Ckpt::default();
    c.add(
        "language_model.model.embed_tokens.weight",
        "BF16",
        &[202_048, h],
    );
    c.add("language_model.model.norm.weight", "BF16", &[h]);
    c.add("language_model.lm_head.weight", "BF16", &[202_048, h]);
    llama_layers(&mut c, "language_model.model.", 48, h, 5120, 1024, 0);
    for i in 0..48 {
        let p = format!("language_model.model.layers.{i}.feed_forward");
        c.add(format!("{p}.router.weight"), "BF16", &[e, h]);
        c.add(
            format!("{p}.experts.gate_up_proj"),
            "BF16",
            &[e, h, 2 * 8192],
        );
        c.add(format!("{p}.experts.down_proj"), "BF16", &[e, 8192, h]);
        c.linear(&format!("{p}.shared_expert.gate_proj"), 8192, h, false);
        c.linear(&format!("{p}.shared_expert.up_proj"), 8192, h, false);
        c.linear(&format!("{p}.shared_expert.down_proj"), h, 8192, false);
    }
    c.add(
        "vision_model.patch_embedding.linear.weight",
        "BF16",
        &[1408, 588],
    );
    c.add("multi_modal_projector.linear_1.weight", "BF16", &[h, 4096]);
    let m = model(
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        config,
        None,
        &c,
    );
    // Per layer 62,914,560 attention + 16 × 3 × 5,120 × 8,192 = 2,013,265,920 experts +
    // 125,829,120 shared + 81,920 router + 10,240 norms = 2,202,101,760, × 48 =
    // 105,700,884,480; + 2 × 202,048 × 5,120 + 5,120 = 107,769,861,120.
    assert_eq!(m.model_params, 107_769_861_120);
    assert_eq!(m.config_params, m.model_params);
    assert_eq!(class(&m, TensorClass::Encoder).0, 1408 * 588 + 5120 * 4096);
    assert_eq!(m.header_params, m.model_params + 1408 * 588 + 5120 * 4096);
    let w = m.spec.attention_window.as_ref().expect("chunks");
    assert_eq!((w.window_tokens, w.full_every), (8192, 4));
    assert!(
        m.notes.iter().any(|n| n.contains("chunked attention")),
        "{:?}",
        m.notes
    );
    let moe = m.spec.moe.as_ref().expect("moe");
    assert_eq!(
        (
            moe.routed_experts,
            moe.shared_experts,
            moe.expert_ffn,
            moe.dense_layers
        ),
        (16, 1, 8192, 0)
    );
}

#[test]
fn mistral_and_mixtral_match_their_checkpoints() {
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 32_000, 4096, true);
    llama_layers(&mut c, "model.", 32, 4096, 4096, 1024, 14_336);
    let m = model(
        "mistralai/Mistral-7B-v0.1",
        &fixture("mistral-7b-v0.1"),
        None,
        &c,
    );
    assert_eq!(m.model_params, 7_241_732_096);
    assert_eq!(
        m.spec.attention_window.as_ref().map(|w| w.window_tokens),
        Some(4096)
    );

    let mut c = Ckpt::default();
    ends(&mut c, "model.", 32_000, 4096, true);
    llama_layers(&mut c, "model.", 32, 4096, 4096, 1024, 0);
    for i in 0..32 {
        let p = format!("model.layers.{i}.block_sparse_moe");
        c.add(format!("{p}.gate.weight"), "BF16", &[8, 4096]);
        for e in 0..8 {
            c.linear(&format!("{p}.experts.{e}.w1"), 14_336, 4096, false);
            c.linear(&format!("{p}.experts.{e}.w2"), 4096, 14_336, false);
            c.linear(&format!("{p}.experts.{e}.w3"), 14_336, 4096, false);
        }
    }
    let m = model(
        "mistralai/Mixtral-8x7B-v0.1",
        &fixture("mixtral-8x7b"),
        None,
        &c,
    );
    // Per layer 41,943,040 + 8 × 3 × 4,096 × 14,336 + 32,768 + 8,192 = 1,451,270,144, × 32
    // + 262,144,000 + 4,096 = 46,702,792,704.
    assert_eq!(m.model_params, 46_702_792_704);
    assert_eq!(class(&m, TensorClass::Router).0, 32 * 8 * 4096);
}

#[test]
fn modelopt_nvfp4_is_read_from_hf_quant_config() {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
      "num_attention_heads": 4, "num_hidden_layers": 1, "num_key_value_heads": 4, "vocab_size": 1000}"#;
    let quant = r#"{"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}"#;
    let mut c = Ckpt::default();
    ends(&mut c, "model.", 1000, 256, true);
    c.add("model.layers.0.mlp.down_proj.weight", "U8", &[256, 256]);
    c.add(
        "model.layers.0.mlp.down_proj.weight_scale",
        "F8_E4M3",
        &[256, 32],
    );
    c.add("model.layers.0.mlp.down_proj.weight_scale_2", "F32", &[]);
    c.add("model.layers.0.mlp.down_proj.input_scale", "F32", &[]);
    let m = model("nvidia/tiny-FP4", config, Some(quant), &c);
    // 256 × 256 bytes of E2M1 pairs = 131,072 weights; one E4M3 scale per 16 = 8,192 bytes,
    // two FP32 per-tensor scales 8 bytes.
    assert_eq!(
        class(&m, TensorClass::DenseMlp),
        (131_072, 65_536, 8_192 + 8)
    );
    let q = m.quantization.as_ref().expect("hf_quant_config");
    assert_eq!(
        (q.source.as_str(), q.element_bits),
        ("hf_quant_config.json", Some(4))
    );
    assert_eq!(q.not_quantized, vec!["lm_head".to_string()]);
}

#[test]
fn unknown_architectures_and_non_transformers_are_named() {
    let gpt2 = r#"{"architectures": ["GPT2LMHeadModel"], "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257}"#;
    let shards: Vec<ShardHeader> = Vec::new();
    let files = |config| HubFiles {
        repo: "openai-community/gpt2",
        config,
        hf_quant_config: None,
        shards: &shards,
    };
    let e = hub_model(&files(gpt2)).expect_err("unknown");
    // GPT-2's config has neither num_hidden_layers nor hidden_size: not read as a transformer
    // the planner maps; a config with them and an unknown architecture names its fields.
    assert!(matches!(e, HubError::NotATransformer { .. }), "{e}");
    let odd = r#"{"architectures": ["FalconForCausalLM"], "num_hidden_layers": 60, "hidden_size": 8192, "new_decoder_architecture": true, "parallel_attn": true}"#;
    let e = hub_model(&files(odd)).expect_err("unknown");
    let msg = e.to_string();
    assert!(matches!(
        e,
        HubError::Config(ImportError::UnsupportedArchitecture { .. })
    ));
    assert!(
        msg.contains("FalconForCausalLM")
            && msg.contains("new_decoder_architecture, parallel_attn"),
        "{msg}"
    );
    let resnet = r#"{"architectures": ["ResNetForImageClassification"], "model_type": "resnet", "hidden_sizes": [256, 512]}"#;
    let msg = hub_model(&files(resnet)).expect_err("resnet").to_string();
    assert!(
        msg.contains("not a transformer") && msg.contains("resnet"),
        "{msg}"
    );
}

#[test]
fn headers_and_indexes_are_checked_where_they_enter() {
    let f = "model.safetensors";
    // The 8-byte length: at most 100 MB.
    assert!(header_length(f, &(MAX_HEADER_BYTES + 1).to_le_bytes()).is_err());
    assert_eq!(header_length(f, &1000u64.to_le_bytes()), Ok(1000));
    assert!(header_length(f, &[1, 2, 3]).is_err());
    let bad = |json: &str| {
        parse_header(f, json.as_bytes())
            .expect_err(json)
            .to_string()
    };
    assert!(
        bad(r#"{"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 15]}}"#)
            .contains("data_offsets")
    );
    assert!(
        bad(r#"{"w": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}}"#)
            .contains("unknown dtype")
    );
    assert!(
        bad(r#"{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 8]}}"#).contains("shape")
    );
    assert!(bad(
        r#"{"w": {"dtype": "U8", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 8]}}"#
    )
    .contains("elements"));
    assert!(
        bad("{\"a\\u0007b\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}")
            .contains("printable")
    );
    assert!(bad(r#"{"__metadata__": {"format": 3}}"#).contains("__metadata__"));
    assert!(bad("[1]").contains("object"));
    let ok = parse_header(f, br#"{"__metadata__": {"format": "pt"}, "w": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}}"#).expect("valid");
    assert_eq!((ok.tensors[0].elements, ok.tensors[0].bytes), (12, 24));

    let index = r#"{"metadata": {"total_size": 16}, "weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}}"#;
    let i = parse_index(index).expect("index");
    assert_eq!(
        i.files,
        vec![
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors"
        ]
    );
    assert_eq!((i.tensors, i.total_size_bytes), (3, Some(16)));
    for shard in [
        "../secret.safetensors",
        "a b.safetensors",
        "x.bin",
        "https://evil/x.safetensors",
    ] {
        let text = format!(r#"{{"weight_map": {{"a": "{shard}"}}}}"#);
        assert!(parse_index(&text).is_err(), "{shard}");
    }
}

#[test]
fn hub_ids_and_urls() {
    assert_eq!(
        parse_hub_id("Qwen/Qwen3-8B"),
        Ok("Qwen/Qwen3-8B".to_string())
    );
    assert_eq!(
        parse_hub_id(" https://huggingface.co/deepseek-ai/DeepSeek-V3/tree/main "),
        Ok("deepseek-ai/DeepSeek-V3".to_string())
    );
    assert_eq!(
        parse_hub_id("hf.co/google/gemma-3-1b-it?x=1"),
        Ok("google/gemma-3-1b-it".to_string())
    );
    for bad in [
        "gpt2",
        "a/../b",
        "org/na me",
        "",
        "/x",
        "org/-x",
        "https://example.com/a/b/c",
    ] {
        assert!(parse_hub_id(bad).is_err(), "{bad}");
    }
    assert_eq!(
        file_url("http://127.0.0.1:9/", "a/b", "config.json"),
        "http://127.0.0.1:9/a/b/resolve/main/config.json"
    );
}
