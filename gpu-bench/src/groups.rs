//! Sub-communicators of a parallel layout: which ranks form each TP, DP and PP
//! group when `world = tp × dp × pp` and TP varies fastest (consecutive ranks,
//! so a TP group sits inside one node), then DP, then PP.
// Megatron-LM parallel_state.initialize_model_parallel: rank order tp → dp → pp.

/// Degrees of the three parallel dimensions benchmarked as groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeshLayout {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
}

/// One parallel dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// Tensor parallel.
    Tp,
    /// Data parallel.
    Dp,
    /// Pipeline parallel.
    Pp,
}

impl GroupKind {
    /// Label used in reports: "tp", "dp", "pp".
    pub fn label(self) -> &'static str {
        match self {
            GroupKind::Tp => "tp",
            GroupKind::Dp => "dp",
            GroupKind::Pp => "pp",
        }
    }
}

impl MeshLayout {
    /// Ranks the layout needs.
    pub fn world(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.dp) * u64::from(self.pp)
    }

    /// Parses `tp=8,dp=2,pp=1` (missing dimensions default to 1) and checks it
    /// covers `world` ranks.
    pub fn parse(text: &str, world: u32) -> Result<Self, String> {
        let mut l = MeshLayout {
            tp: 1,
            dp: 1,
            pp: 1,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("--layout: '{part}' is not key=value (e.g. tp=8,dp=2)"))?;
            let v: u32 = value
                .trim()
                .parse()
                .ok()
                .filter(|v| *v >= 1)
                .ok_or_else(|| format!("--layout: {key}='{value}' is not a positive integer"))?;
            match key.trim() {
                "tp" => l.tp = v,
                "dp" => l.dp = v,
                "pp" => l.pp = v,
                other => {
                    return Err(format!(
                        "--layout: unknown dimension '{other}' (use tp, dp, pp)"
                    ))
                }
            }
        }
        if l.world() != u64::from(world) {
            return Err(format!(
                "--layout: tp×dp×pp = {}×{}×{} = {} but the run has {world} ranks",
                l.tp,
                l.dp,
                l.pp,
                l.world()
            ));
        }
        Ok(l)
    }

    /// Degree of one dimension.
    pub fn degree(&self, kind: GroupKind) -> u32 {
        match kind {
            GroupKind::Tp => self.tp,
            GroupKind::Dp => self.dp,
            GroupKind::Pp => self.pp,
        }
    }

    /// The group id ("color" for `ncclCommSplit`) of `rank` in dimension `kind`.
    pub fn color(&self, kind: GroupKind, rank: u32) -> u32 {
        let (tp, dp) = (self.tp, self.dp);
        match kind {
            GroupKind::Tp => rank / tp,
            GroupKind::Dp => (rank / (tp * dp)) * tp + rank % tp,
            GroupKind::Pp => rank % (tp * dp),
        }
    }

    /// Ranks of the `kind` group that holds `rank`, in increasing order.
    pub fn members(&self, kind: GroupKind, rank: u32) -> Vec<u32> {
        let (tp, dp, pp) = (self.tp, self.dp, self.pp);
        let tp_rank = rank % tp;
        let dp_rank = (rank / tp) % dp;
        let pp_rank = rank / (tp * dp);
        match kind {
            GroupKind::Tp => (0..tp)
                .map(|t| pp_rank * tp * dp + dp_rank * tp + t)
                .collect(),
            GroupKind::Dp => (0..dp)
                .map(|d| pp_rank * tp * dp + d * tp + tp_rank)
                .collect(),
            GroupKind::Pp => (0..pp)
                .map(|p| p * tp * dp + dp_rank * tp + tp_rank)
                .collect(),
        }
    }
}

/// Most members of `members` that share one node when nodes hold
/// `ranks_per_node` consecutive ranks.
pub fn group_ranks_per_node(members: &[u32], ranks_per_node: u32) -> u32 {
    let rpn = ranks_per_node.max(1);
    let mut best = 0u32;
    let mut i = 0;
    while i < members.len() {
        let node = members[i] / rpn;
        let count = members[i..].iter().take_while(|r| *r / rpn == node).count() as u32;
        best = best.max(count);
        i += count.max(1) as usize;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megatron_order_tp_fastest() {
        // 16 ranks, tp=2 dp=4 pp=2: Megatron's documented example groups.
        let l = MeshLayout::parse("tp=2,dp=4,pp=2", 16).unwrap();
        assert_eq!(l.members(GroupKind::Tp, 5), vec![4, 5]);
        assert_eq!(l.members(GroupKind::Dp, 5), vec![1, 3, 5, 7]);
        assert_eq!(l.members(GroupKind::Pp, 5), vec![5, 13]);
        assert_eq!(l.members(GroupKind::Dp, 8), vec![8, 10, 12, 14]);
    }

    #[test]
    fn colors_agree_with_members() {
        let l = MeshLayout::parse("tp=4,dp=3,pp=2", 24).unwrap();
        for kind in [GroupKind::Tp, GroupKind::Dp, GroupKind::Pp] {
            for r in 0..24 {
                let members = l.members(kind, r);
                assert_eq!(members.len() as u32, l.degree(kind));
                assert!(members.contains(&r));
                for m in &members {
                    assert_eq!(l.color(kind, *m), l.color(kind, r), "{kind:?} {r} {m}");
                }
            }
        }
    }

    #[test]
    fn layout_errors_name_the_problem() {
        assert!(MeshLayout::parse("tp=3", 8)
            .unwrap_err()
            .contains("8 ranks"));
        assert!(MeshLayout::parse("tp=x", 8).unwrap_err().contains("tp='x'"));
        assert!(MeshLayout::parse("ep=8", 8).unwrap_err().contains("'ep'"));
        assert_eq!(MeshLayout::parse("", 1).unwrap().world(), 1);
    }

    #[test]
    fn ranks_per_node_of_groups() {
        let l = MeshLayout::parse("tp=8,dp=4", 32).unwrap();
        assert_eq!(group_ranks_per_node(&l.members(GroupKind::Tp, 9), 8), 8);
        assert_eq!(group_ranks_per_node(&l.members(GroupKind::Dp, 9), 8), 1);
        assert_eq!(group_ranks_per_node(&[0, 1, 2, 3], 2), 2);
    }
}
