//! `cargo run -p e2e --bin prerender -- DIST`: writes the pre-rendered default page
//! into `DIST/index.html` (see `e2e::prerender`); `cargo xtask test` and
//! `cargo xtask build` run it after `trunk build --release`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dist = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(e2e::dist_dir);
    match e2e::prerender::prerender(&dist) {
        Ok(shot) => {
            println!(
                "{}",
                e2e::prerender::summary(&shot, &dist.join("index.html"))
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("prerender: {e}");
            ExitCode::FAILURE
        }
    }
}
