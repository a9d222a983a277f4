//! Browser-side helpers shared by the import and export panels: reading a
//! picked or dropped file (size checked before a byte is read), copying text
//! (clipboard with a select-and-copy fallback) and a download link. Files never
//! leave the browser.
//!
//! A file is read with `File.text()` through web-sys, not gloo-file: that is one promise and no
//! hand-written closure or listener, where gloo-file reads through a `FileReader`, its load and
//! error callbacks and a channel.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The first file of a file input or a drop.
pub fn first_file(files: Option<web_sys::FileList>) -> Option<web_sys::File> {
    files.and_then(|f| f.get(0))
}

/// The file of an `<input type=file>` change event.
pub fn file_of_input_event(ev: &web_sys::Event) -> Option<web_sys::File> {
    let input = ev.target()?.dyn_into::<web_sys::HtmlInputElement>().ok()?;
    first_file(input.files())
}

/// The file of a drop event.
pub fn file_of_drop(ev: &web_sys::DragEvent) -> Option<web_sys::File> {
    first_file(ev.data_transfer().and_then(|d| d.files()))
}

/// Reads a file as UTF-8 text, refusing it unread when it is larger than
/// `limit_bytes` (`File.size` is known without reading).
pub async fn read_text(file: &web_sys::File, limit_bytes: usize) -> Result<String, String> {
    let size = file.size();
    if !(size.is_finite() && size <= limit_bytes as f64) {
        return Err(format!(
            "{}: {} bytes is larger than the {}-byte limit; the file was not read",
            file.name(),
            crate::format::thousands(size.max(0.0) as u64),
            crate::format::thousands(limit_bytes as u64),
        ));
    }
    let text = JsFuture::from(file.text())
        .await
        .map_err(|_| format!("{}: the browser could not read the file", file.name()))?;
    text.as_string()
        .ok_or_else(|| format!("{}: not text", file.name()))
}

/// Copies `text`; when the clipboard API is missing or refused, selects the
/// contents of `fallback` and asks the browser to copy the selection.
/// Reports what happened in words.
pub async fn copy_text(text: &str, fallback: Option<web_sys::Element>) -> String {
    let Some(window) = web_sys::window() else {
        return "No window".into();
    };
    let navigator = window.navigator();
    let has_clipboard = js_sys::Reflect::get(&navigator, &"clipboard".into())
        .map(|v| !v.is_undefined() && !v.is_null())
        .unwrap_or(false);
    if has_clipboard {
        let promise = navigator.clipboard().write_text(text);
        if JsFuture::from(promise).await.is_ok() {
            return "Copied".into();
        }
    }
    let selected = fallback.is_some_and(|el| {
        window
            .get_selection()
            .ok()
            .flatten()
            .is_some_and(|sel| sel.select_all_children(&el).is_ok())
    });
    let copied = window
        .document()
        .and_then(|d| d.dyn_into::<web_sys::HtmlDocument>().ok())
        .and_then(|d| d.exec_command("copy").ok())
        .unwrap_or(false);
    match (selected, copied) {
        (_, true) => "Copied".into(),
        (true, false) => "Clipboard blocked: the text is selected, copy it (Ctrl+C)".into(),
        (false, false) => "Clipboard blocked: select the text and copy it".into(),
    }
}

/// A `data:` URL holding `text`, for an `<a download>` link.
pub fn data_url(text: &str, mime: &str) -> String {
    format!(
        "data:{mime};charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(text))
    )
}

/// A file picker that hands its file to `take`, then clears itself: picking the same file
/// again must fire change again.
#[component]
pub fn FilePick(
    accept: &'static str,
    testid: &'static str,
    take: Callback<Option<web_sys::File>>,
) -> impl IntoView {
    view! {
        <input
            type="file"
            accept=accept
            data-testid=testid
            on:change=move |ev| {
                take.run(file_of_input_event(&ev));
                if let Some(input) = ev
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
                {
                    input.set_value("");
                }
            }
        />
    }
}

/// What an import did, or why it did nothing: a status, or an alert when `error`.
#[component]
pub fn ImportMessage(
    text: String,
    error: bool,
    testid: &'static str,
    #[prop(default = "issue error")] error_class: &'static str,
    #[prop(default = "ok")] ok_class: &'static str,
    /// The imported model's parameter count, for the tests (the Hub import's).
    #[prop(optional)]
    params: Option<String>,
) -> impl IntoView {
    view! {
        <p
            class=if error { error_class } else { ok_class }
            role=if error { "alert" } else { "status" }
            data-testid=testid
            data-error=if error { "true" } else { "false" }
            data-params=params
        >
            {text}
        </p>
    }
}
