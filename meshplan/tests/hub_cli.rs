//! `meshplan eval --hf`: against a fixture hub on a loopback port serving the Hub's URL layout
//! (`/{repo}/resolve/main/{file}`): config, index, shard headers by range, a gated 401, a 404,
//! a 429 and a response too slow for a short timeout. Never the internet.

mod common;

use planner_core::edges::hub::safetensors::{header_bytes, Dtype};

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Llama 3.2 1B's config (tied embeddings).
const CONFIG: &str = r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64,
  "vocab_size": 128256, "tie_word_embeddings": true, "hidden_act": "silu", "_name_or_path": "meta-llama/Llama-3.2-1B"}"#;

/// A shard's first bytes (length prefix, header), and nothing after: the server must never
/// be asked for the weights.
fn shard(tensors: &[(String, Vec<u64>)]) -> Vec<u8> {
    let typed: Vec<_> = tensors
        .iter()
        .map(|(n, s)| (n.clone(), Dtype::BF16, s.clone()))
        .collect();
    header_bytes(&typed)
}

/// Llama 3.2 1B's tensors in two shards: embedding and layers 0–7, then layers 8–15 and norm.
fn shards() -> (Vec<u8>, Vec<u8>) {
    let layer = |i: u64| -> Vec<(String, Vec<u64>)> {
        let p = format!("model.layers.{i}");
        vec![
            (format!("{p}.self_attn.q_proj.weight"), vec![2048, 2048]),
            (format!("{p}.self_attn.k_proj.weight"), vec![512, 2048]),
            (format!("{p}.self_attn.v_proj.weight"), vec![512, 2048]),
            (format!("{p}.self_attn.o_proj.weight"), vec![2048, 2048]),
            (format!("{p}.mlp.gate_proj.weight"), vec![8192, 2048]),
            (format!("{p}.mlp.up_proj.weight"), vec![8192, 2048]),
            (format!("{p}.mlp.down_proj.weight"), vec![2048, 8192]),
            (format!("{p}.input_layernorm.weight"), vec![2048]),
            (format!("{p}.post_attention_layernorm.weight"), vec![2048]),
        ]
    };
    let mut a = vec![("model.embed_tokens.weight".to_string(), vec![128_256, 2048])];
    a.extend((0..8).flat_map(layer));
    let mut b: Vec<_> = (8..16).flat_map(layer).collect();
    b.push(("model.norm.weight".to_string(), vec![2048]));
    (shard(&a), shard(&b))
}

struct Hub {
    port: u16,
    /// Every request: path, Range header, Authorization header.
    seen: Arc<Mutex<Vec<(String, String, String)>>>,
}

fn respond(
    mut s: TcpStream,
    files: &HashMap<String, Vec<u8>>,
    seen: &Mutex<Vec<(String, String, String)>>,
) {
    let mut reader = BufReader::new(s.try_clone().expect("clone"));
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut range, mut auth) = (String::new(), String::new());
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("range:") {
            range = v.trim().to_string();
        }
        if lower.starts_with("authorization:") {
            auth = h["authorization:".len()..].trim().to_string();
        }
    }
    seen.lock()
        .expect("lock")
        .push((path.clone(), range.clone(), auth));
    let status =
        |code: &str| format!("HTTP/1.1 {code}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let reply = if path.starts_with("/org/gated/") {
        status("401 Unauthorized").into_bytes()
    } else if path.starts_with("/org/limited/") {
        status("429 Too Many Requests").into_bytes()
    } else if path.starts_with("/org/slow/") {
        std::thread::sleep(Duration::from_secs(3));
        status("404 Not Found").into_bytes()
    } else if let Some(body) = files.get(&path) {
        let (code, body) = match range.strip_prefix("bytes=").and_then(|r| r.split_once('-')) {
            Some((a, b)) => {
                let a: usize = a.parse().unwrap_or(0);
                let b: usize = b
                    .parse::<usize>()
                    .unwrap_or(usize::MAX)
                    .min(body.len().saturating_sub(1));
                (
                    "206 Partial Content",
                    body.get(a..=b).unwrap_or(&[]).to_vec(),
                )
            }
            None => ("200 OK", body.clone()),
        };
        let mut r = format!(
            "HTTP/1.1 {code}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(&body);
        r
    } else {
        status("404 Not Found").into_bytes()
    };
    let _ = s.write_all(&reply);
}

fn hub() -> Hub {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (a, b) = shards();
    let index = r#"{"metadata": {"total_size": 2471628800}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors", "model.norm.weight": "model-00002-of-00002.safetensors"}}"#;
    let mut files = HashMap::new();
    let base = "/org/tiny/resolve/main";
    files.insert(format!("{base}/config.json"), CONFIG.as_bytes().to_vec());
    files.insert(
        format!("{base}/model.safetensors.index.json"),
        index.as_bytes().to_vec(),
    );
    files.insert(format!("{base}/model-00001-of-00002.safetensors"), a);
    files.insert(format!("{base}/model-00002-of-00002.safetensors"), b);
    files.insert(
        "/org/resnet/resolve/main/config.json".to_string(),
        br#"{"architectures": ["ResNetForImageClassification"], "model_type": "resnet"}"#.to_vec(),
    );
    let files = Arc::new(files);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let (files, seen) = (Arc::clone(&files), Arc::clone(&seen2));
            std::thread::spawn(move || respond(s, &files, &seen));
        }
    });
    Hub { port, seen }
}

fn cache_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hub-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(h: &Hub, cache: &PathBuf, args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_meshplan"));
    cmd.args(args)
        .current_dir(common::repo_root())
        .env("HF_ENDPOINT", format!("http://127.0.0.1:{}", h.port))
        .env("MESHPLAN_HUB_CACHE", cache)
        .env("MESHPLAN_HUB_TIMEOUT_S", "1")
        .env_remove("HF_TOKEN");
    if let Some(t) = token {
        cmd.env("HF_TOKEN", t);
    }
    cmd.output().expect("run meshplan")
}

#[test]
fn eval_hf_reads_headers_by_range_and_caches_them() {
    let h = hub();
    let cache = cache_dir("ok");
    let out = run(&h, &cache, &["eval", "--hf", "org/tiny"], Some("hf_test"));
    let text = common::ok(&out);
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    // Llama 3.2 1B: 1,235,814,400 parameters (worked in planner-core's hub_model test), tied.
    assert_eq!(v["hub"]["model"]["model_params"], 1_235_814_400u64);
    assert_eq!(v["hub"]["model"]["spec"]["tied_embeddings"], true);
    assert_eq!(v["model"]["name"], "tiny");
    let seen = h.seen.lock().expect("lock").clone();
    // Every shard read is a range: bytes 0–7, then the header; never the weights.
    let shard_reads: Vec<_> = seen
        .iter()
        .filter(|(p, _, _)| p.ends_with(".safetensors"))
        .collect();
    assert_eq!(shard_reads.len(), 4, "{seen:?}");
    assert!(
        shard_reads.iter().all(|(_, r, _)| r.starts_with("bytes=")),
        "{seen:?}"
    );
    assert!(shard_reads.iter().any(|(_, r, _)| r == "bytes=0-7"));
    assert!(
        seen.iter().all(|(_, _, a)| a == "Bearer hf_test"),
        "{seen:?}"
    );
    // Again: from the cache, only the optional file that was absent is asked again.
    let before = seen.len();
    let table = common::ok(&run(
        &h,
        &cache,
        &["eval", "--hf", "https://huggingface.co/org/tiny", "--table"],
        None,
    ));
    assert!(table.contains("1235814400 parameters"), "{table}");
    assert!(table.contains("(cache,"), "{table}");
    let after: Vec<_> = h.seen.lock().expect("lock")[before..]
        .iter()
        .map(|s| s.0.clone())
        .collect();
    assert!(
        after
            .iter()
            .all(|p| !p.ends_with(".safetensors") && !p.ends_with("/config.json")),
        "{after:?}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn hub_errors_name_what_went_wrong_and_exit_non_zero() {
    let h = hub();
    let cache = cache_dir("err");
    let cases = [
        ("org/gated", "gated or private"),
        ("org/missing", "not found (HTTP 404"),
        ("org/limited", "rate limited (HTTP 429)"),
        ("org/slow", "timeout"),
        ("org/resnet", "not a transformer"),
        ("not an id", "is not `org/name`"),
    ];
    for (id, expected) in cases {
        let out = run(&h, &cache, &["eval", "--hf", id], None);
        let err = common::stderr(&out);
        assert!(!out.status.success(), "{id}");
        assert!(out.stdout.is_empty(), "{id}: printed a result");
        assert!(err.contains(expected), "{id}: {err}");
    }
    let gated = common::stderr(&run(&h, &cache, &["eval", "--hf", "org/gated"], None));
    assert!(
        gated.contains("HF_TOKEN") && gated.contains("config.json"),
        "{gated}"
    );
    // Nothing was cached from a failed fetch but what succeeded.
    assert!(!cache.join("org/gated").exists());
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn fit_hf_plans_the_hub_model_in_the_scenario() {
    let h = hub();
    let cache = cache_dir("fit");
    let args = [
        "fit",
        "examples/finetune-qlora-8b.json",
        "--hf",
        "org/tiny",
        "--json",
    ];
    let peak = |text: &str| {
        let v: serde_json::Value = serde_json::from_str(text).expect("json");
        v["report"]["current"]["peak_bytes"].as_f64().expect("peak")
    };
    let hub_peak = peak(&common::ok(&run(&h, &cache, &args, None)));
    let file_peak = peak(&common::ok(&run(
        &h,
        &cache,
        &[args[0], args[1], "--json"],
        None,
    )));
    // The scenario's Llama 3.1 8B (8.03B parameters) is replaced by the fixture hub's Llama 3.2
    // 1B (1.24B): the QLoRA peak falls (14.3 GB for the file's model, 6.5 GB for the Hub's).
    assert!(hub_peak < 0.6 * file_peak, "{hub_peak} vs {file_peak}");
    // A refusal changes nothing and prints nothing.
    let out = run(
        &h,
        &cache,
        &[
            "fit",
            "examples/finetune-qlora-8b.json",
            "--hf",
            "org/missing",
        ],
        None,
    );
    assert!(!out.status.success() && out.stdout.is_empty());
    assert!(common::stderr(&out).contains("not found (HTTP 404"));
    let _ = std::fs::remove_dir_all(&cache);
}
