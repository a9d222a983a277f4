//! `quantization_config` (in `config.json`) and ModelOpt's `hf_quant_config.json`: the method,
//! its element width (what a packed integer tensor holds) and the modules it leaves alone.

use serde_json::Value;

use super::HubError;

/// A checkpoint's quantization, as its files state it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Quantization {
    /// Which file said it: `config.json quantization_config` or `hf_quant_config.json`.
    pub source: String,
    /// `quant_method` (or ModelOpt's `quant_algo`), made printable.
    pub method: String,
    /// The weight format in words (e.g. "FP8 E4M3, 128 × 128 blocks, FP32 scales").
    pub format: String,
    /// Bits of one weight element, where the method says (4 for MXFP4 / NVFP4 / 4-bit AWQ).
    pub element_bits: Option<u32>,
    /// Modules left unquantized, as listed (at most 20, printable).
    pub not_quantized: Vec<String>,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(|s| {
        crate::base::free_text::one_line(s)
            .chars()
            .take(60)
            .collect()
    })
}

fn list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().take(20).filter_map(|x| text(Some(x))).collect())
        .unwrap_or_default()
}

/// The quantization `config.json`'s `quantization_config` states, else what
/// `hf_quant_config.json` (when fetched) states; `None` for a checkpoint in its training dtype.
pub fn quantization(
    config: &Value,
    hf_quant_config: Option<&str>,
) -> Result<Option<Quantization>, HubError> {
    if let Some(q) = config
        .get("quantization_config")
        .or_else(|| config.pointer("/text_config/quantization_config"))
        .filter(|q| q.is_object())
    {
        return Ok(Some(from_config(q)));
    }
    let Some(t) = hf_quant_config else {
        return Ok(None);
    };
    let v: Value = serde_json::from_str(t).map_err(|e| HubError::BadFile {
        file: "hf_quant_config.json".to_string(),
        message: format!("not JSON: {e}"),
    })?;
    let q = v.get("quantization").unwrap_or(&v);
    let algo = text(q.get("quant_algo")).unwrap_or_else(|| "unknown".to_string());
    Ok(Some(Quantization {
        source: "hf_quant_config.json".to_string(),
        format: modelopt_format(&algo, q),
        element_bits: modelopt_bits(&algo),
        method: algo,
        not_quantized: list(q.get("exclude_modules")),
    }))
}

/// ModelOpt's algorithms: NVFP4 (E2M1, 16-element blocks), FP8, W4A16/W4A8 AWQ.
fn modelopt_bits(algo: &str) -> Option<u32> {
    let a = algo.to_ascii_uppercase();
    if a.contains("FP4") || a.contains("W4A") || a.contains("INT4") {
        Some(4)
    } else if a.contains("FP8") || a.contains("INT8") {
        Some(8)
    } else {
        None
    }
}

fn modelopt_format(algo: &str, q: &Value) -> String {
    let group = q.get("group_size").and_then(Value::as_u64);
    match (algo.to_ascii_uppercase().as_str(), group) {
        ("NVFP4", g) => format!(
            "NVFP4: E2M1, {}-element blocks with E4M3 scales, FP32 per-tensor scale",
            g.unwrap_or(16)
        ),
        ("FP8", _) => "FP8 E4M3, per-tensor FP32 scales".to_string(),
        (a, Some(g)) => format!("{a}, groups of {g}"),
        (a, None) => a.to_string(),
    }
}

fn from_config(q: &Value) -> Quantization {
    let method = text(q.get("quant_method")).unwrap_or_else(|| "unknown".to_string());
    let bits = q
        .get("bits")
        .and_then(Value::as_u64)
        .and_then(|b| u32::try_from(b).ok());
    let group = q.get("group_size").and_then(Value::as_u64);
    let (format, element_bits) = match method.as_str() {
        "fp8" => {
            let block = q
                .get("weight_block_size")
                .and_then(Value::as_array)
                .map(|b| {
                    b.iter()
                        .filter_map(Value::as_u64)
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" × ")
                });
            let f = match block {
                Some(b) => format!("FP8 E4M3, {b} blocks, FP32 scales"),
                None => "FP8 E4M3, per-tensor FP32 scales".to_string(),
            };
            (f, Some(8))
        }
        // transformers Mxfp4Config (gpt-oss): E2M1 in 32-element blocks with E8M0 scales.
        "mxfp4" => (
            "MXFP4: E2M1, 32-element blocks, E8M0 scales".to_string(),
            Some(4),
        ),
        "modelopt" => {
            let algo = text(q.get("quant_algo")).unwrap_or_else(|| "unknown".to_string());
            (modelopt_format(&algo, q), modelopt_bits(&algo))
        }
        "awq" | "gptq" => {
            let b = bits.unwrap_or(4);
            (
                format!("INT{b} weight-only, groups of {}", group.unwrap_or(128)),
                Some(b),
            )
        }
        "compressed-tensors" => {
            let b = q
                .pointer("/config_groups/group_0/weights/num_bits")
                .and_then(Value::as_u64)
                .and_then(|b| u32::try_from(b).ok());
            let f = text(q.get("format")).unwrap_or_else(|| "compressed-tensors".to_string());
            (f, b)
        }
        "bitsandbytes" => {
            let four = q
                .get("load_in_4bit")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let f = if four {
                "bitsandbytes 4-bit"
            } else {
                "bitsandbytes 8-bit"
            };
            (f.to_string(), Some(if four { 4 } else { 8 }))
        }
        other => (other.to_string(), bits),
    };
    let mut not_quantized = list(q.get("modules_to_not_convert"));
    not_quantized.extend(list(q.get("ignore")));
    not_quantized.truncate(20);
    Quantization {
        source: "config.json quantization_config".to_string(),
        method,
        format,
        element_bits,
        not_quantized,
    }
}
