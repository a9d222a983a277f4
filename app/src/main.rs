//! The page's wasm module: the controls and the views of the first screens
//! (`app::App`); the sections further down come with the deferred module
//! (`src/bin/app-deferred.rs`).

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
fn main() {
    app::start_page();
}
