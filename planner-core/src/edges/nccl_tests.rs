//! Parsing nccl-tests output: its text table and its `-J` JSON file.
//!
//! Layout of both as written by nccl-tests `src/util.cu` (JSON file version 2):
//! rows of `size count type redop root`, then `time algbw busbw #wrong` for
//! out-of-place and again for in-place. Input is untrusted: every error names
//! the line or field, and sizes are bounded.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::time::collectives::Collective;

/// Largest input accepted, bytes (checked before parsing).
pub const MAX_INPUT_BYTES: usize = 32 * 1024 * 1024;
/// Largest message size accepted, bytes.
pub const MAX_MESSAGE_BYTES: f64 = 1e13;

/// One measured size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NcclRow {
    /// Message size in nccl-tests convention, bytes.
    pub size_bytes: f64,
    /// Elements.
    pub count: f64,
    /// Element type name ("float", "bfloat16", ...).
    pub dtype: String,
    /// Time per operation, microseconds.
    pub time_us: f64,
    /// Algorithm bandwidth, GB/s.
    pub algbw_gb_per_s: f64,
    /// Bus bandwidth, GB/s.
    pub busbw_gb_per_s: f64,
    /// Wrong elements, when validation ran.
    pub wrong: Option<f64>,
    /// In-place measurement (false: out-of-place).
    pub in_place: bool,
}

/// One nccl-tests run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NcclRun {
    /// The operation, from the program name when the output names it.
    pub op: Option<Collective>,
    /// Ranks, from the device list.
    pub ranks: Option<u64>,
    /// Distinct hosts in the device list.
    pub hosts: Option<u64>,
    /// Rows, out-of-place and in-place.
    pub rows: Vec<NcclRow>,
}

impl NcclRun {
    /// Ranks per host when both are known.
    pub fn ranks_per_node(&self) -> Option<u64> {
        match (self.ranks, self.hosts) {
            (Some(r), Some(h)) if h > 0 => Some(r / h),
            _ => None,
        }
    }
}

/// Why an nccl-tests output could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcclParseError {
    /// Where: `line 12` or a JSON path like `results[3].out_of_place.time`.
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for NcclParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

impl std::error::Error for NcclParseError {}

fn err(at: impl Into<String>, message: impl Into<String>) -> NcclParseError {
    NcclParseError {
        at: at.into(),
        message: message.into(),
    }
}

/// Parses either format: JSON when the text starts with `{`, else the table.
pub fn parse(text: &str) -> Result<NcclRun, NcclParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(err("input", format!("larger than {MAX_INPUT_BYTES} bytes")));
    }
    if text.trim_start().starts_with('{') {
        parse_json(text)
    } else {
        parse_text(text)
    }
}

fn op_from_program(name: &str) -> Option<Collective> {
    let stem = name.rsplit('/').next().unwrap_or(name);
    Collective::from_id(stem)
}

fn checked(at: &str, what: &str, v: f64, max: f64) -> Result<f64, NcclParseError> {
    if !v.is_finite() || v < 0.0 || v > max {
        return Err(err(
            at,
            format!("{what} {v} is not a finite value in 0..={max}"),
        ));
    }
    Ok(v)
}

/// Drops what launchers put before each line: Open MPI's `--tag-output`
/// (`[1,0]<stdout>:`) and Slurm's `--label` (`0: `).
fn strip_launcher_prefix(line: &str) -> &str {
    if line.starts_with('[') {
        if let Some(end) = line.find(">:") {
            return line[end + 2..].trim();
        }
    }
    if let Some((head, rest)) = line.split_once(':') {
        if !head.is_empty() && head.trim().chars().all(|c| c.is_ascii_digit()) {
            return rest.trim();
        }
    }
    line
}

/// Parses the text table nccl-tests prints on stdout.
pub fn parse_text(text: &str) -> Result<NcclRun, NcclParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(err("input", format!("larger than {MAX_INPUT_BYTES} bytes")));
    }
    let mut run = NcclRun {
        op: None,
        ranks: None,
        hosts: None,
        rows: Vec::new(),
    };
    // Distinct host names, borrowed from the text: a set, so many hosts stay linear.
    let mut hosts: HashSet<&str> = HashSet::new();
    let mut ranks = 0u64;
    let mut ngpus_line: Option<u64> = None;
    for (i, line) in text.lines().enumerate() {
        let at = format!("line {}", i + 1);
        let t = strip_launcher_prefix(line.trim());
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix('#') {
            let rest = rest.trim();
            if let Some(name) = rest.strip_prefix("Collective test starting:") {
                run.op = op_from_program(name.trim());
            } else if rest.starts_with("Rank") {
                // "Rank  0 Group  0 Pid 123 on host device  0 [...] NVIDIA H100"
                let words: Vec<&str> = rest.split_whitespace().collect();
                if let Some(pos) = words.iter().position(|w| *w == "on") {
                    if let Some(h) = words.get(pos + 1) {
                        hosts.insert(h);
                    }
                }
                ranks += 1;
            } else if rest.starts_with("nThread") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let get = |k: &str| {
                    words
                        .iter()
                        .position(|w| *w == k)
                        .and_then(|p| words.get(p + 1))
                        .and_then(|v| v.parse::<u64>().ok())
                };
                if let (Some(t), Some(g)) = (get("nThread"), get("nGpus")) {
                    ngpus_line = Some(t.saturating_mul(g));
                }
            }
            continue;
        }
        let mut tokens: Vec<&str> = t.split_whitespace().collect();
        // A trailing timestamp (`-T`) is "YYYY-MM-DD HH:MM:SS".
        while tokens
            .last()
            .is_some_and(|w| w.contains(':') || w.matches('-').count() == 2)
        {
            tokens.pop();
        }
        if tokens.len() < 7 || tokens[0].parse::<f64>().is_err() {
            // Not a data row (warnings, NCCL INFO lines): skip.
            continue;
        }
        let num = |s: &str, what: &str| -> Result<f64, NcclParseError> {
            s.parse::<f64>()
                .map_err(|_| err(at.clone(), format!("{what} `{s}` is not a number")))
        };
        let size = checked(&at, "size", num(tokens[0], "size")?, MAX_MESSAGE_BYTES)?;
        let count = checked(&at, "count", num(tokens[1], "count")?, MAX_MESSAGE_BYTES)?;
        let dtype = tokens[2].to_string();
        // The measured tail: one or two groups of time, algbw, busbw, #wrong.
        let tail_len = if tokens.len() >= 3 + 8 { 8 } else { 4 };
        let tail = &tokens[tokens.len() - tail_len..];
        for (g, chunk) in tail.chunks(4).enumerate() {
            let in_place = tail_len == 8 && g == 1;
            let time_us = checked(&at, "time", num(chunk[0], "time")?, 1e12)?;
            let algbw = checked(&at, "algbw", num(chunk[1], "algbw")?, 1e7)?;
            let busbw = checked(&at, "busbw", num(chunk[2], "busbw")?, 1e7)?;
            let wrong = chunk[3].parse::<f64>().ok();
            if time_us > 0.0 {
                run.rows.push(NcclRow {
                    size_bytes: size,
                    count,
                    dtype: dtype.clone(),
                    time_us,
                    algbw_gb_per_s: algbw,
                    busbw_gb_per_s: busbw,
                    wrong,
                    in_place,
                });
            }
        }
        if run.rows.len() > 1_000_000 {
            return Err(err(at, "more than 1,000,000 rows"));
        }
    }
    if run.rows.is_empty() {
        return Err(err("input", "no nccl-tests result rows found"));
    }
    run.ranks = if ranks > 0 { Some(ranks) } else { ngpus_line };
    run.hosts = if hosts.is_empty() {
        None
    } else {
        Some(hosts.len() as u64)
    };
    Ok(run)
}

/// Parses the JSON file nccl-tests writes with `-J` (file version 2).
pub fn parse_json(text: &str) -> Result<NcclRun, NcclParseError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(err("input", format!("larger than {MAX_INPUT_BYTES} bytes")));
    }
    let v: Value =
        serde_json::from_str(text).map_err(|e| err("input", format!("not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| err("input", "top level is not an object"))?;
    let op = obj
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .and_then(op_from_program);
    let config = obj.get("config");
    let per_proc = config
        .map(|c| {
            let get = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(1);
            get("nthreads").saturating_mul(get("ngpus"))
        })
        .unwrap_or(1);
    let devices = config
        .and_then(|c| c.get("devices"))
        .and_then(Value::as_array);
    let (ranks, hosts) = match devices {
        Some(d) if !d.is_empty() => {
            let mut hosts: Vec<&str> = d
                .iter()
                .filter_map(|x| x.get("hostname").and_then(Value::as_str))
                .collect();
            hosts.sort_unstable();
            hosts.dedup();
            let h = hosts.len() as u64;
            (
                Some((d.len() as u64).saturating_mul(per_proc)),
                if h > 0 { Some(h) } else { None },
            )
        }
        _ => (config.map(|_| per_proc), None),
    };
    let results = obj
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| err("results", "missing or not a list"))?;
    if results.len() > 1_000_000 {
        return Err(err("results", "more than 1,000,000 rows"));
    }
    let mut rows = Vec::with_capacity(results.len() * 2);
    for (i, r) in results.iter().enumerate() {
        let at = |k: &str| format!("results[{i}].{k}");
        let size = r
            .get("size")
            .and_then(Value::as_f64)
            .ok_or_else(|| err(at("size"), "missing or not a number"))?;
        let size = checked(&at("size"), "size", size, MAX_MESSAGE_BYTES)?;
        let count = r.get("count").and_then(Value::as_f64).unwrap_or(0.0);
        let dtype = r
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        for (key, in_place) in [("out_of_place", false), ("in_place", true)] {
            let Some(m) = r.get(key) else { continue };
            if m.is_null() {
                continue;
            }
            let f = |k: &str| -> Result<f64, NcclParseError> {
                let path = format!("results[{i}].{key}.{k}");
                match m.get(k) {
                    Some(Value::Number(n)) => {
                        n.as_f64().ok_or_else(|| err(path.clone(), "not a number"))
                    }
                    // nccl-tests writes NaN as the string "nan".
                    Some(Value::String(s)) => Err(err(path, format!("not a number: `{s}`"))),
                    _ => Err(err(path, "missing")),
                }
            };
            let time_us = match m.get("time") {
                Some(_) => f("time")?,
                None => f("cpu_time")?,
            };
            let time_us = checked(&format!("results[{i}].{key}.time"), "time", time_us, 1e12)?;
            let algbw = checked(
                &format!("results[{i}].{key}.alg_bw"),
                "alg_bw",
                f("alg_bw")?,
                1e7,
            )?;
            let busbw = checked(
                &format!("results[{i}].{key}.bus_bw"),
                "bus_bw",
                f("bus_bw")?,
                1e7,
            )?;
            let wrong = m.get("nwrong").and_then(Value::as_f64);
            if time_us > 0.0 {
                rows.push(NcclRow {
                    size_bytes: size,
                    count,
                    dtype: dtype.clone(),
                    time_us,
                    algbw_gb_per_s: algbw,
                    busbw_gb_per_s: busbw,
                    wrong,
                    in_place,
                });
            }
        }
    }
    if rows.is_empty() {
        return Err(err("results", "no measured rows"));
    }
    Ok(NcclRun {
        op,
        ranks,
        hosts,
        rows,
    })
}
