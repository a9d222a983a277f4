//! One module per subcommand.

pub mod bill;
mod calibrate;
pub mod deadline;
mod eval;
mod export;
mod fit;
pub mod fleet;
mod link;
mod search;
pub mod serve;
pub mod serve_search;
mod validate;
mod validate_gpu_hours;
mod validate_parts;
mod validate_serving;

use crate::cli::Command;
use crate::error::CliError;

/// Runs a subcommand; its output is printed by `main`.
pub fn run(command: Command) -> Result<String, CliError> {
    match command {
        Command::Eval {
            scenario,
            link,
            hf,
            table,
        } => eval::run(scenario.as_deref(), link.as_deref(), hf.as_deref(), table),
        Command::Export {
            scenario,
            link,
            format,
            json,
            out_dir,
        } => export::run(&export::Args {
            path: scenario.as_deref(),
            query: link.as_deref(),
            format: &format,
            json,
            out_dir: out_dir.as_deref(),
        }),
        Command::Fit {
            input,
            dataset_tokens,
            examples,
            mean_len,
            json,
            hub,
        } => fit::run(
            &hub.apply(crate::input::read_file_or_link(&input)?)?,
            fit::dataset(dataset_tokens, examples, mean_len),
            json,
        ),
        Command::Bill(args) => bill::run(&args),
        Command::Deadline(args) => deadline::run(&args),
        Command::Fleet(args) => fleet::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::ServeSearch(args) => serve_search::run(&args),
        Command::Link { scenario } => link::encode(&scenario),
        Command::DecodeLink { query, lenient } => link::decode(&query, lenient),
        Command::Search {
            scenario,
            calibration,
            top,
            rejected,
            rank_order,
            every_knob,
            table,
            hub,
        } => search::run(&search::Args {
            scenario: &scenario,
            hub: &hub,
            calibration: calibration.as_deref(),
            top,
            rejected,
            rank_order: &rank_order,
            every_knob,
            table,
        }),
        Command::Validate {
            dataset,
            gpu_hours: true,
            json,
            ..
        } => validate_gpu_hours::run(dataset.as_deref(), json),
        Command::Validate {
            dataset,
            parts: true,
            json,
            table,
            ..
        } => validate_parts::run(dataset.as_deref(), json, table),
        Command::Validate {
            dataset,
            serving: true,
            json,
            table,
            ..
        } => validate_serving::run(dataset.as_deref(), json, table),
        Command::Validate {
            dataset,
            json,
            table,
            no_search,
            write_errors,
            memory,
            ..
        } => validate::run(&validate::Args {
            dataset: dataset.as_deref(),
            json,
            table,
            search: !no_search && !memory,
            write_errors: write_errors.as_deref(),
            memory,
        }),
        Command::Calibrate {
            inputs,
            gpu,
            op,
            ranks,
            ranks_per_node,
            table,
            compact,
        } => calibrate::run(&calibrate::Args {
            inputs: &inputs,
            gpu: gpu.as_deref(),
            op: op.as_deref(),
            ranks,
            ranks_per_node,
            table,
            compact,
        }),
    }
}
