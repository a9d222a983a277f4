//! The page's wasm module: the controls and the views of the first screens
//! (`app::App`); the sections further down come with the deferred module
//! (`src/bin/app-deferred.rs`).

fn main() {
    app::start_page();
}
