//! Free text from outside (a model or GPU name from a link, a scenario file, an HF
//! `config.json`, a form): the one check where it enters, and the escapers every
//! exporter applies when it writes text into a format, so a string that skipped
//! the check is still inert.
//!
//! Written by hand: the escapes are a few lines each, and a serializer crate per
//! format (TOML, YAML) would weigh on the page's wasm bundle for one string field.
//! The tests parse every escaped string back with the real parsers (`toml`,
//! `serde_yaml`, `serde_json`, `shlex`) to hold these to the formats' specs.

/// Longest free-text value accepted (display names, ids), in characters.
pub const MAX_TEXT_CHARS: usize = 200;

/// Characters a free-text value may not hold: every control character (C0, DEL, C1:
/// newlines, carriage returns, NEL, escapes), the Unicode line and paragraph
/// separators, and the bidirectional overrides and isolates that make text read in
/// another order than it runs ("Trojan Source", CVE-2021-42574).
pub fn is_forbidden_char(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{FEFF}')
}

/// Why `value` is not acceptable free text, or `None` when it is: printable
/// characters only, at most [`MAX_TEXT_CHARS`]. The message names no field; the
/// caller attaches it to its field.
pub fn text_problem(value: &str) -> Option<String> {
    if let Some((i, c)) = value
        .chars()
        .enumerate()
        .find(|(_, c)| is_forbidden_char(*c))
    {
        return Some(format!(
            "holds the non-printable character U+{:04X} at position {}; only printable characters are allowed",
            u32::from(c),
            i + 1
        ));
    }
    let n = value.chars().count();
    if n > MAX_TEXT_CHARS {
        return Some(format!(
            "is {n} characters long, more than {MAX_TEXT_CHARS}"
        ));
    }
    None
}

/// `value` with every forbidden character replaced by U+FFFD and cut to
/// [`MAX_TEXT_CHARS`]: safe on one line of any format (a comment cannot end early,
/// a Markdown list item cannot start another). Unchanged for valid text.
pub fn one_line(value: &str) -> String {
    value
        .chars()
        .take(MAX_TEXT_CHARS)
        .map(|c| if is_forbidden_char(c) { '\u{FFFD}' } else { c })
        .collect()
}

/// One POSIX shell word that expands to exactly `value` (IEEE Std 1003.1, 2.2.3:
/// inside single quotes every character is literal; a single quote is written
/// `'\''`). Words of only safe characters are left bare, so `meta-llama/Llama-3.1-8B`
/// stays as it reads.
pub fn shell_word(value: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !value.is_empty() && value.chars().all(safe) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// A TOML basic string holding exactly `value` (TOML 1.0, "String": quote,
/// backslash and control characters other than tab must be escaped).
pub fn toml_string(value: &str) -> String {
    let named = [
        ('"', "\\\""),
        ('\\', "\\\\"),
        ('\n', "\\n"),
        ('\r', "\\r"),
        ('\t', "\\t"),
    ];
    double_quoted(value, &named, |c| c.is_control() || is_forbidden_char(c))
}

/// `value` between double quotes: each character of `named` as its escape, a character
/// `coded` picks as `\uXXXX`, every other as itself.
fn double_quoted(value: &str, named: &[(char, &str)], coded: fn(char) -> bool) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if let Some((_, escape)) = named.iter().find(|(n, _)| *n == c) {
            out.push_str(escape);
        } else if coded(c) {
            out.push_str(&format!("\\u{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// A YAML double-quoted scalar holding exactly `value` (YAML 1.2, 5.7 and 7.3.1:
/// `\"`, `\\` and `\uXXXX` escapes; line breaks and every non-printable character
/// escaped so the scalar stays on one line).
pub fn yaml_string(value: &str) -> String {
    double_quoted(value, &[('"', "\\\""), ('\\', "\\\\")], is_forbidden_char)
}

/// A Python string literal holding exactly `value` (Python reference, 2.4.1 "String and Bytes
/// literals": in a double-quoted literal `\"`, `\\` and `\uXXXX` are escapes, the same three
/// [`yaml_string`] writes, and every forbidden character is BMP), so the literal is the YAML one.
pub fn python_string(value: &str) -> String {
    yaml_string(value)
}

/// `value` as Markdown text on one line: forbidden characters replaced, the HTML
/// specials as entities (a Markdown renderer passes raw HTML through), and the
/// characters that start Markdown syntax backslash-escaped (CommonMark 2.4).
pub fn markdown_text(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in one_line(value).chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '!' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_text_passes_and_is_unchanged_by_one_line() {
        for s in ["Llama 3.1 70B", "my-model (v2) ‘quoted’ 日本語", ""] {
            assert_eq!(text_problem(s), None, "{s}");
            assert_eq!(one_line(s), s);
        }
    }

    #[test]
    fn line_breaks_controls_and_bidi_are_refused_with_their_position() {
        let p = text_problem("evil\ncurl x | sh").expect("newline refused");
        assert!(p.contains("U+000A at position 5"), "{p}");
        for bad in [
            "a\rb",
            "a\u{2028}b",
            "a\u{202E}b",
            "a\u{7f}b",
            "a\u{85}b",
            "a\0b",
        ] {
            assert!(text_problem(bad).is_some(), "{bad:?}");
            assert!(!one_line(bad).chars().any(is_forbidden_char));
        }
        assert!(text_problem(&"x".repeat(201)).is_some());
        assert_eq!(text_problem(&"é".repeat(200)), None);
    }

    #[test]
    fn shell_word_leaves_safe_words_bare_and_quotes_the_rest() {
        assert_eq!(
            shell_word("meta-llama/Llama-3.1-8B"),
            "meta-llama/Llama-3.1-8B"
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$(id)"), "'$(id)'");
    }

    #[test]
    fn markdown_text_neutralises_html_and_syntax() {
        assert_eq!(
            markdown_text("<img src=x onerror=alert(1)> *b* [l](u)\n# h"),
            "&lt;img src=x onerror=alert(1)&gt; \\*b\\* \\[l\\](u)\u{FFFD}\\# h"
        );
    }
}
