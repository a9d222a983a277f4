//! End-to-end tests of the release build in headless Chromium: one binary (planner-core
//! links once), one module per part of the page.
//!
//! Ignored by a plain `cargo test`: they need `dist/` (trunk build --release) and chromedriver.
//! `cargo xtask test` runs them with `--ignored`, or:
//! `MESHPLAN_DIST=$PWD/dist CHROMEDRIVER=/usr/bin/chromedriver cargo test -p e2e --test browser -- --ignored --test-threads=1 --nocapture`;
//! a filter such as `mesh::` runs one module.

mod app;
mod deferred;
mod finetune;
mod first_paint;
mod import;
mod latency;
mod mesh;
mod offload;
mod serving;
mod step_choices;
mod teach;
mod uneven;
mod will_it_fit;
