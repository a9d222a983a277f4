//! Text tables on stdout. The collective table follows nccl-tests' layout
//! (size, count, type, redop, root, then time/algbw/busbw/#wrong for
//! out-of-place and in-place) so the two can be compared line by line.

use planner_core::edges::report::{
    CollectiveOp, CollectiveResult, GemmResult, LayerStepResult, MemoryBandwidthResult,
};

/// Column headers for one collective sweep.
pub fn collective_header(op: CollectiveOp, group: &str, ranks: u32, ranks_per_node: u32) -> String {
    format!(
        "# {} on group '{group}' ({ranks} ranks, {ranks_per_node} per node)\n\
         #{:>11}  {:>12}  {:>8}  {:>6}  {:>5}  {:>8} {:>7} {:>7} {:>6}  {:>8} {:>7} {:>7} {:>6}\n\
         #{:>11}  {:>12}  {:>8}  {:>6}  {:>5}  {:>8} {:>7} {:>7} {:>6}  {:>8} {:>7} {:>7} {:>6}",
        op.name(),
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "(B)",
        "(elements)",
        "",
        "",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        "",
        "(us)",
        "(GB/s)",
        "(GB/s)",
        ""
    )
}

/// nccl-tests prints times with fewer decimals as they grow.
fn time_text(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{us:.0}")
    } else if us >= 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

fn half(r: Option<&CollectiveResult>) -> String {
    match r {
        Some(r) => format!(
            "{:>8} {:>7.2} {:>7.2} {:>6}",
            time_text(r.time_us),
            r.algbw_gb_per_s,
            r.busbw_gb_per_s,
            r.wrong
        ),
        None => format!("{:>8} {:>7} {:>7} {:>6}", "-", "-", "-", "-"),
    }
}

fn redop(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::AllReduce | CollectiveOp::ReduceScatter | CollectiveOp::Reduce => "sum",
        _ => "none",
    }
}

fn root(op: CollectiveOp) -> &'static str {
    match op {
        CollectiveOp::Broadcast | CollectiveOp::Reduce => "0",
        _ => "-1",
    }
}

/// One row: the same size out-of-place and in-place.
pub fn collective_row(
    out_of_place: Option<&CollectiveResult>,
    in_place: Option<&CollectiveResult>,
) -> String {
    let Some(any) = out_of_place.or(in_place) else {
        return String::new();
    };
    format!(
        " {:>11}  {:>12}  {:>8}  {:>6}  {:>5}  {}  {}",
        any.bytes,
        any.count,
        any.dtype.nccl_name(),
        redop(any.op),
        root(any.op),
        half(out_of_place),
        half(in_place)
    )
}

/// GEMM table header.
pub fn gemm_header() -> String {
    format!(
        "#{:>7} {:>7} {:>7}  {:>8}  {:>10}  {:>8}  label",
        "m", "n", "k", "type", "time(us)", "TFLOP/s"
    )
}

/// One GEMM row.
pub fn gemm_row(g: &GemmResult) -> String {
    format!(
        " {:>7} {:>7} {:>7}  {:>8}  {:>10}  {:>8.1}  {}",
        g.m,
        g.n,
        g.k,
        g.dtype.nccl_name(),
        time_text(g.time_us),
        g.tflops,
        g.label
    )
}

/// One memory-bandwidth row.
pub fn membw_row(m: &MemoryBandwidthResult) -> String {
    format!(
        " {}: {} B moved (read + write) in {} us = {:.1} GB/s",
        m.label,
        m.bytes,
        time_text(m.time_us),
        m.gb_per_s
    )
}

/// One layer-step row.
pub fn layer_row(s: &LayerStepResult) -> String {
    format!(
        " {:?} {} tp={} dp={}: compute {} us, comm {} us, sequential {} us, overlapped {} us, exposed comm {} us, peak {:.2} GB",
        s.kind,
        s.label,
        s.tp,
        s.dp,
        time_text(s.compute_us),
        time_text(s.comm_us),
        time_text(s.sequential_us),
        time_text(s.overlapped_us),
        time_text(s.exposed_comm_us),
        s.peak_memory_bytes as f64 / 1e9
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use planner_core::edges::report::{algbw_gb_per_s, busbw_gb_per_s, Dtype};

    #[test]
    fn row_reproduces_nccl_tests_numbers() {
        // nccl-tests all_reduce_perf, 4 ranks: 33554432 B, 317.64 us, algbw 105.64, busbw 158.46.
        let r = CollectiveResult {
            op: CollectiveOp::AllReduce,
            ranks: 4,
            ranks_per_node: 4,
            group: "world".into(),
            dtype: Dtype::Fp32,
            bytes: 33_554_432,
            count: 8_388_608,
            in_place: false,
            time_us: 317.64,
            algbw_gb_per_s: algbw_gb_per_s(33_554_432, 317.64),
            busbw_gb_per_s: busbw_gb_per_s(CollectiveOp::AllReduce, 4, 33_554_432, 317.64),
            wrong: 0,
        };
        let row = collective_row(Some(&r), None);
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cols[..9],
            &["33554432", "8388608", "float", "sum", "-1", "317.6", "105.64", "158.46", "0"]
        );
        assert!(collective_header(CollectiveOp::AllReduce, "world", 4, 4).contains("busbw"));
    }
}
