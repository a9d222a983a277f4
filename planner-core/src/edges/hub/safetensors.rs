//! The safetensors index (`model.safetensors.index.json`) and shard headers, read at the edge.
//!
//! A shard starts with an 8-byte little-endian header length N, then N bytes of JSON: tensor
//! name → `{dtype, shape, data_offsets: [begin, end]}` and an optional `__metadata__` map of
//! strings (safetensors format, huggingface/safetensors README "Format"). Only the header is
//! ever read; every name, shape and offset is checked here before anything counts it.

use serde_json::Value;

use super::HubError;

/// Largest header accepted (safetensors' own parser refuses headers over 100 MB:
/// `safetensors/src/tensor.rs` `MAX_HEADER_SIZE = 100_000_000`).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;
/// Most shards an index may name (DeepSeek-V3 ships 163).
pub const MAX_SHARDS: usize = 4096;
/// Longest tensor name accepted, in characters.
pub const MAX_TENSOR_NAME_CHARS: usize = 512;
/// Largest dimension of a tensor (2^40 elements).
const MAX_DIM: u64 = 1 << 40;
/// Most elements in one tensor (2^48; the largest embedding today is about 2^31).
const MAX_ELEMENTS: u64 = 1 << 48;

/// A safetensors element type (safetensors `Dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Dtype {
    /// 64-bit float.
    F64,
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// bfloat16.
    BF16,
    /// FP8 E4M3.
    F8E4M3,
    /// FP8 E5M2.
    F8E5M2,
    /// FP8 E8M0 (an MX block scale).
    F8E8M0,
    /// Signed integers of 64, 32, 16, 8 bits.
    I64,
    /// 32-bit signed integer (AWQ/GPTQ pack eight 4-bit values in one).
    I32,
    /// 16-bit signed integer.
    I16,
    /// 8-bit signed integer.
    I8,
    /// Unsigned integers.
    U64,
    /// 32-bit unsigned integer.
    U32,
    /// 16-bit unsigned integer.
    U16,
    /// 8-bit unsigned integer (packed FP4 pairs, E8M0 or E4M3 scales stored as bytes).
    U8,
    /// Boolean, one byte.
    Bool,
}

impl Dtype {
    /// The header's spelling, or `None` for one this reader does not know.
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "F64" => Dtype::F64,
            "F32" => Dtype::F32,
            "F16" => Dtype::F16,
            "BF16" => Dtype::BF16,
            "F8_E4M3" => Dtype::F8E4M3,
            "F8_E5M2" => Dtype::F8E5M2,
            "F8_E8M0" => Dtype::F8E8M0,
            "I64" => Dtype::I64,
            "I32" => Dtype::I32,
            "I16" => Dtype::I16,
            "I8" => Dtype::I8,
            "U64" => Dtype::U64,
            "U32" => Dtype::U32,
            "U16" => Dtype::U16,
            "U8" => Dtype::U8,
            "BOOL" => Dtype::Bool,
            _ => return None,
        })
    }

    /// The header's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F64 => "F64",
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::F8E4M3 => "F8_E4M3",
            Dtype::F8E5M2 => "F8_E5M2",
            Dtype::F8E8M0 => "F8_E8M0",
            Dtype::I64 => "I64",
            Dtype::I32 => "I32",
            Dtype::I16 => "I16",
            Dtype::I8 => "I8",
            Dtype::U64 => "U64",
            Dtype::U32 => "U32",
            Dtype::U16 => "U16",
            Dtype::U8 => "U8",
            Dtype::Bool => "BOOL",
        }
    }

    /// Bits of one stored element.
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 32,
            Dtype::F16 | Dtype::BF16 | Dtype::I16 | Dtype::U16 => 16,
            _ => 8,
        }
    }

    /// An integer container (what packed sub-byte weights are stored in).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Dtype::I64
                | Dtype::I32
                | Dtype::I16
                | Dtype::I8
                | Dtype::U64
                | Dtype::U32
                | Dtype::U16
                | Dtype::U8
        )
    }
}

/// One tensor of a shard header, checked.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TensorInfo {
    /// The tensor's name (printable, at most [`MAX_TENSOR_NAME_CHARS`]).
    pub name: String,
    /// Element type as stored.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Stored elements (the product of the shape).
    pub elements: u64,
    /// Stored bytes (`data_offsets` end − begin, equal to elements × dtype bytes).
    pub bytes: u64,
}

/// One shard's header.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ShardHeader {
    /// The shard's file name.
    pub file: String,
    /// Its tensors, in the header's order.
    pub tensors: Vec<TensorInfo>,
}

/// What `model.safetensors.index.json` says.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SafetensorsIndex {
    /// The shard files the weight map names, sorted, each once.
    pub files: Vec<String>,
    /// Tensors in the weight map.
    pub tensors: usize,
    /// `metadata.total_size` (bytes of every tensor), when present.
    pub total_size_bytes: Option<u64>,
}

fn bad(file: &str, message: String) -> HubError {
    HubError::BadFile {
        file: crate::base::free_text::one_line(file),
        message,
    }
}

/// A shard or file name the layout `{endpoint}/{repo}/resolve/main/{file}` can carry as is:
/// ASCII letters, digits, `-`, `_`, `.` and `/` between non-empty segments other than `.`
/// and `..`, at most 200 characters.
pub fn valid_file_name(name: &str) -> bool {
    name.len() <= 200
        && name
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

/// The header's length from a shard's first 8 bytes, checked against [`MAX_HEADER_BYTES`].
pub fn header_length(file: &str, prefix: &[u8]) -> Result<u64, HubError> {
    let bytes: [u8; 8] = prefix
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            bad(
                file,
                format!(
                    "{} bytes where the 8-byte header length should be",
                    prefix.len()
                ),
            )
        })?;
    let n = u64::from_le_bytes(bytes);
    if !(2..=MAX_HEADER_BYTES).contains(&n) {
        return Err(bad(
            file,
            format!("header length {n} bytes is outside 2 to {MAX_HEADER_BYTES} (not a safetensors file?)"),
        ));
    }
    Ok(n)
}

/// A shard header's JSON (the N bytes after the length), every tensor checked.
pub fn parse_header(file: &str, json: &[u8]) -> Result<ShardHeader, HubError> {
    if json.len() as u64 > MAX_HEADER_BYTES {
        return Err(bad(
            file,
            format!("header of {} bytes is over {MAX_HEADER_BYTES}", json.len()),
        ));
    }
    let value: Value =
        serde_json::from_slice(json).map_err(|e| bad(file, format!("header is not JSON: {e}")))?;
    let map = value
        .as_object()
        .ok_or_else(|| bad(file, "header is not a JSON object".to_string()))?;
    let mut tensors = Vec::with_capacity(map.len());
    for (name, entry) in map {
        if name == "__metadata__" {
            let strings = entry
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string));
            if !strings {
                return Err(bad(
                    file,
                    "`__metadata__` must map names to strings".to_string(),
                ));
            }
            continue;
        }
        tensors.push(tensor(file, name, entry)?);
    }
    Ok(ShardHeader {
        file: crate::base::free_text::one_line(file),
        tensors,
    })
}

fn tensor(file: &str, name: &str, entry: &Value) -> Result<TensorInfo, HubError> {
    let printable =
        crate::base::free_text::text_problem(&name.chars().take(200).collect::<String>()).is_none()
            && name.chars().count() <= MAX_TENSOR_NAME_CHARS
            && !name.is_empty();
    if !printable {
        return Err(bad(
            file,
            format!(
                "tensor name `{}` is empty, too long or not printable",
                crate::base::free_text::one_line(name)
            ),
        ));
    }
    let shown = crate::base::free_text::one_line(name);
    let field = |what: &str| bad(file, format!("tensor `{shown}`: {what}"));
    let dtype_text = entry
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| field("`dtype` is missing or not a string"))?;
    let dtype = Dtype::parse(dtype_text).ok_or_else(|| {
        field(&format!(
            "unknown dtype `{}`",
            crate::base::free_text::one_line(dtype_text)
        ))
    })?;
    let shape_value = entry
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| field("`shape` is missing or not a list"))?;
    if shape_value.len() > 8 {
        return Err(field("`shape` has more than 8 dimensions"));
    }
    let mut shape = Vec::with_capacity(shape_value.len());
    let mut elements: u64 = 1;
    for d in shape_value {
        let d = d.as_u64().filter(|d| *d <= MAX_DIM).ok_or_else(|| {
            field(&format!(
                "a dimension of `shape` is not an integer in 0 to {MAX_DIM}"
            ))
        })?;
        elements = elements
            .checked_mul(d)
            .filter(|n| *n <= MAX_ELEMENTS)
            .ok_or_else(|| field(&format!("`shape` holds more than {MAX_ELEMENTS} elements")))?;
        shape.push(d);
    }
    let offsets = entry
        .get("data_offsets")
        .and_then(Value::as_array)
        .ok_or_else(|| field("`data_offsets` is missing or not a list"))?;
    let (begin, end) = match offsets.as_slice() {
        [b, e] => (b.as_u64(), e.as_u64()),
        _ => (None, None),
    };
    let (Some(begin), Some(end)) = (begin, end) else {
        return Err(field("`data_offsets` is not two integers"));
    };
    // safetensors tensor.rs `validate`: end − begin must equal the shape times the dtype size.
    let bytes = elements * dtype.bits() / 8;
    if end < begin || end - begin != bytes {
        return Err(field(&format!(
            "`data_offsets` [{begin}, {end}] hold {} bytes, the shape and dtype {bytes}",
            end.saturating_sub(begin)
        )));
    }
    Ok(TensorInfo {
        name: name.to_string(),
        dtype,
        shape,
        elements,
        bytes,
    })
}

/// A shard's first bytes for `tensors` (name, dtype, shape), laid out back to back: the
/// 8-byte length and the JSON header [`parse_header`] reads. For fixtures (the tests' hubs
/// serve these bytes); names are written as given, so they must need no JSON escape.
pub fn header_bytes(tensors: &[(String, Dtype, Vec<u64>)]) -> Vec<u8> {
    let mut json = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut offset = 0u64;
    for (name, dtype, shape) in tensors {
        let bytes = shape.iter().product::<u64>() * dtype.bits() / 8;
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        json.push_str(&format!(
            ",\"{name}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{offset},{}]}}",
            dtype.name(),
            dims.join(","),
            offset + bytes
        ));
        offset += bytes;
    }
    json.push('}');
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out
}

/// `model.safetensors.index.json`: the shard files its weight map names.
pub fn parse_index(text: &str) -> Result<SafetensorsIndex, HubError> {
    let file = "model.safetensors.index.json";
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(file, format!("not JSON: {e}")))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad(file, "`weight_map` is missing or not an object".to_string()))?;
    let mut files: Vec<String> = Vec::new();
    for (name, shard) in map {
        let shard = shard.as_str().filter(|s| valid_file_name(s) && s.ends_with(".safetensors")).ok_or_else(|| {
            bad(
                file,
                format!(
                    "`weight_map.{}` is not a .safetensors file name of letters, digits, '-', '_', '.', '/'",
                    crate::base::free_text::one_line(name)
                ),
            )
        })?;
        files.push(shard.to_string());
    }
    files.sort();
    files.dedup();
    if files.is_empty() || files.len() > MAX_SHARDS {
        return Err(bad(
            file,
            format!(
                "names {} shard files; 1 to {MAX_SHARDS} expected",
                files.len()
            ),
        ));
    }
    let total_size_bytes = value
        .pointer("/metadata/total_size")
        .and_then(Value::as_u64);
    Ok(SafetensorsIndex {
        files,
        tensors: map.len(),
        total_size_bytes,
    })
}
