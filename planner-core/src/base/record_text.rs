//! Records of text fields: the form of the page's worker replies
//! (`validation::PageReply::to_text`, `serving_page::ViewReply::to_text`). The page reads
//! them with [`split`] and `str::parse`, which it links anyway (share links), instead of a
//! JSON parser: `serde_json`'s `Value` reader and its number parsing were about 10 KB
//! gzipped of the page's first-load wasm once the model importer left it (issue 16).
//!
//! A record is fields joined by [`FIELD`]; a message is records joined by [`RECORD`].
//! [`escape`] keeps both separators and the backslash out of a field, so any text
//! round-trips. Numbers are written with `{}` (Rust's shortest text that parses back to
//! the same `f64`, `NaN` and `inf` included); an absent `Option` is the empty field.

/// Separates a record's fields (ASCII unit separator).
pub const FIELD: char = '\u{1f}';
/// Separates a message's records (ASCII record separator).
pub const RECORD: char = '\u{1e}';

/// `text` with `\` as `\\`, [`FIELD`] as `\u`, [`RECORD`] as `\r`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            FIELD => out.push_str("\\u"),
            RECORD => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// The text [`escape`] was given.
pub fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => out.push(FIELD),
            Some('r') => out.push(RECORD),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// One record of escaped fields.
pub fn record(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| escape(f))
        .collect::<Vec<_>>()
        .join(&FIELD.to_string())
}

/// A message's records, each as its unescaped fields.
pub fn split(message: &str) -> Vec<Vec<String>> {
    message
        .split(RECORD)
        .map(|r| r.split(FIELD).map(unescape).collect())
        .collect()
}

/// A number field.
pub fn number(fields: &[String], i: usize, name: &str) -> Result<f64, String> {
    let f = fields
        .get(i)
        .ok_or_else(|| format!("`{name}` is missing"))?;
    f.parse()
        .map_err(|_| format!("`{name}`: `{f}` is not a number"))
}

/// An optional number field (empty = `None`).
pub fn maybe_number(fields: &[String], i: usize, name: &str) -> Result<Option<f64>, String> {
    match fields.get(i) {
        Some(f) if f.is_empty() => Ok(None),
        Some(_) => number(fields, i, name).map(Some),
        None => Err(format!("`{name}` is missing")),
    }
}

/// A count field.
pub fn count<T: std::str::FromStr>(fields: &[String], i: usize, name: &str) -> Result<T, String> {
    let f = fields
        .get(i)
        .ok_or_else(|| format!("`{name}` is missing"))?;
    f.parse()
        .map_err(|_| format!("`{name}`: `{f}` is not a count"))
}

/// A text field.
pub fn text(fields: &[String], i: usize, name: &str) -> Result<String, String> {
    fields
        .get(i)
        .cloned()
        .ok_or_else(|| format!("`{name}` is missing"))
}

/// An optional number as its field.
pub fn maybe_field(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| x.to_string())
}
