//! Field readers over `serde_json::Value` for the hand-written reply decoders
//! (`validation::PageReply::from_json`, `serving_page::ServingReply::from_json`), which keep
//! a reader of those JSON forms from linking derived visitors. The page itself reads the
//! record text (`base::record_text`) and links no JSON parser. Each error names the field.

use serde_json::Value;

/// `v[name]`, or an error naming it.
pub(crate) fn field<'v>(v: &'v Value, name: &str) -> Result<&'v Value, String> {
    v.get(name).ok_or_else(|| format!("no field `{name}`"))
}

/// `v[name]` as a string.
pub(crate) fn string(v: &Value, name: &str) -> Result<String, String> {
    field(v, name)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("`{name}` is not a string"))
}

/// `v[name]` as a string or null.
pub(crate) fn maybe_string(v: &Value, name: &str) -> Result<Option<String>, String> {
    match field(v, name)? {
        Value::Null => Ok(None),
        x => x
            .as_str()
            .map(|s| Some(s.to_string()))
            .ok_or_else(|| format!("`{name}` is not a string or null")),
    }
}

/// `v[name]` as a number.
pub(crate) fn number(v: &Value, name: &str) -> Result<f64, String> {
    field(v, name)?
        .as_f64()
        .ok_or_else(|| format!("`{name}` is not a number"))
}

/// `v[name]` as a number or null.
pub(crate) fn maybe(v: &Value, name: &str) -> Result<Option<f64>, String> {
    match field(v, name)? {
        Value::Null => Ok(None),
        x => x
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("`{name}` is not a number or null")),
    }
}

/// `v[name]` as a boolean.
pub(crate) fn flag(v: &Value, name: &str) -> Result<bool, String> {
    field(v, name)?
        .as_bool()
        .ok_or_else(|| format!("`{name}` is not a boolean"))
}

/// `v[name]` as a non-negative integer that fits `T`.
pub(crate) fn count<T: TryFrom<u64>>(v: &Value, name: &str) -> Result<T, String> {
    field(v, name)?
        .as_u64()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("`{name}` is not a count"))
}

/// `v[name]` as a list, each item read by `item`.
pub(crate) fn list<T>(
    v: &Value,
    name: &str,
    item: impl Fn(&Value) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    field(v, name)?
        .as_array()
        .ok_or_else(|| format!("`{name}` is not a list"))?
        .iter()
        .map(item)
        .collect()
}
