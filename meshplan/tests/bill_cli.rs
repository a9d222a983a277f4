//! `meshplan bill` and `meshplan deadline`: outputs and exit codes.

mod common;
use common::{meshplan, stderr};

const MESH_LINK: &str = "v=1&model=llama-3.1-70b&gpus=512&seq=32768&gbs=64&pp=4&cp=4&dp=4";

/// `fleet` for 20 requests/s within 2 s TTFT and 50 ms TPOT on H100 SXM or A100 80 GB, by flags.
const FLEET_BY_FLAGS: &[&str] = &[
    "fleet",
    "v=1&model=llama-3.1-70b",
    "--rate",
    "20",
    "--ttft-ms",
    "2000",
    "--tpot-ms",
    "50",
    "--gpus",
    "h100-sxm,a100-80gb",
];

#[test]
fn bill_prints_every_figure_with_its_formula_and_the_defaults_sources() {
    let out = meshplan(&["bill", "examples/article-70b-mesh.json", "--table"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "Goodput",
        "√(2 × ",
        "Checkpoint size",
        "Tokens per joule",
        "default: Uptime Institute survey 2024",
        "GPU-hours",
    ] {
        assert!(text.contains(want), "{want} missing:\n{text}");
    }
}

#[test]
fn a_bill_flag_out_of_range_exits_2_naming_its_link_key() {
    let out = meshplan(&["bill", MESH_LINK, "--pue", "0.7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bill_pue"), "{}", stderr(&out));
    let out = meshplan(&["bill", MESH_LINK, "--price", "spot"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bill_price"), "{}", stderr(&out));
}

#[test]
fn deadline_names_the_smallest_cluster_and_why_the_smaller_fail() {
    let out = meshplan(&[
        "deadline",
        MESH_LINK,
        "--tokens",
        "1e12",
        "--days",
        "30",
        "--nodes",
        "1,8,64,128",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Smallest cluster:"), "{text}");
    assert!(
        text.contains("too slow") || text.contains("does not fit"),
        "{text}"
    );
}

#[test]
fn fleet_ranks_gpu_types_by_dollars_per_million_tokens() {
    let out = meshplan(FLEET_BY_FLAGS);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("h100-sxm") && text.contains("a100-80gb"),
        "{text}"
    );
    let out = meshplan(&["fleet", "v=1", "--rate", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--rate"), "{}", stderr(&out));
}

/// The inverse questions' inputs ride in the share link: a link carrying the rate, bounds and
/// GPU types answers as the same flags do (the page's "Fewest GPUs" asks with that link).
#[test]
fn fleet_reads_its_goal_from_the_link() {
    let flags = meshplan(FLEET_BY_FLAGS);
    let link = meshplan(&[
        "fleet",
        "v=1&model=llama-3.1-70b&fleet_rps=20&fleet_gpus=h100-sxm%2Ca100-80gb",
    ]);
    assert!(link.status.success(), "{}", stderr(&link));
    assert_eq!(flags.stdout, link.stdout);
    let bad = meshplan(&[
        "fleet",
        "v=1&model=llama-3.1-70b&fleet_gpus=h100-sxm%2Cnope",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("fleet_gpus"), "{}", stderr(&bad));
}
