//! Message sizes to sweep, nccl-tests style (`-b MIN -e MAX -f FACTOR`).

/// Sizes from `min_bytes` to `max_bytes` inclusive, multiplying by `factor`.
///
/// Errors name the offending option.
pub fn size_sweep(min_bytes: u64, max_bytes: u64, factor: u64) -> Result<Vec<u64>, String> {
    if min_bytes == 0 {
        return Err("--min-bytes must be at least 1".into());
    }
    if max_bytes < min_bytes {
        return Err(format!(
            "--max-bytes ({max_bytes}) must be at least --min-bytes ({min_bytes})"
        ));
    }
    if factor < 2 {
        return Err("--factor must be at least 2".into());
    }
    let mut sizes = Vec::new();
    let mut size = min_bytes;
    while size <= max_bytes {
        sizes.push(size);
        match size.checked_mul(factor) {
            Some(next) => size = next,
            None => break,
        }
    }
    Ok(sizes)
}

/// Rounds `bytes` down to a whole number of elements that splits evenly over
/// `ranks` (all-gather, reduce-scatter and all-to-all move `bytes / ranks` per
/// rank), at least one element per rank.
// nccl-tests common.cu: count is rounded down to a multiple of nranks for these ops.
pub fn align_bytes(bytes: u64, element_bytes: u64, ranks: u64) -> u64 {
    let unit = element_bytes.max(1) * ranks.max(1);
    (bytes / unit).max(1) * unit
}

/// Parses a size such as `8`, `64K`, `1M`, `2G` (binary multiples, as nccl-tests does).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1u64 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1u64 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1u64 << 40),
        _ => (t, 1),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 8, 64K, 1M, 2G)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_matches_nccl_tests_b8_e128m_f2() {
        // nccl-tests `-b 8 -e 128M -f 2` prints 25 rows: 8 B .. 128 MiB.
        let s = size_sweep(8, 128 << 20, 2).unwrap();
        assert_eq!(s.len(), 25);
        assert_eq!(s[0], 8);
        assert_eq!(*s.last().unwrap(), 128 << 20);
    }

    #[test]
    fn sweep_stops_below_max_and_rejects_bad_options() {
        assert_eq!(size_sweep(1024, 5000, 4).unwrap(), vec![1024, 4096]);
        assert!(size_sweep(0, 10, 2).unwrap_err().contains("--min-bytes"));
        assert!(size_sweep(10, 1, 2).unwrap_err().contains("--max-bytes"));
        assert!(size_sweep(1, 10, 1).unwrap_err().contains("--factor"));
        assert_eq!(size_sweep(u64::MAX / 2, u64::MAX, 4).unwrap().len(), 1);
    }

    #[test]
    fn alignment_splits_evenly() {
        assert_eq!(align_bytes(1000, 2, 8), 992);
        assert_eq!(align_bytes(8, 4, 8), 32);
        assert_eq!(align_bytes(1 << 30, 2, 1), 1 << 30);
    }

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("8").unwrap(), 8);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert!(parse_size("x").is_err());
    }
}
