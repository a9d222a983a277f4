//! torchrun: the launch line (rendezvous per the torchrun docs).

use super::*;

pub(super) fn torchrun_flags(c: &Ctx) -> Result<Vec<String>, String> {
    let (nnodes, nproc) = c.nodes.clone()?;
    let mut flags = vec![
        format!("--nnodes={nnodes}"),
        format!("--nproc-per-node={nproc}"),
    ];
    if nnodes > 1 {
        flags.push("--rdzv-backend=c10d".to_string());
        flags.push("--rdzv-endpoint=$HEAD_NODE_ADDR:29500".to_string());
        flags.push("--rdzv-id=$JOB_ID".to_string());
    } else {
        flags.push("--standalone".to_string());
    }
    Ok(flags)
}

// torchrun: torch/distributed/run.py (`--nnodes`, `--nproc-per-node`, `--rdzv-backend`,
// `--rdzv-endpoint`, `--rdzv-id`); c10d rendezvous per the torchrun docs.
pub(super) fn torchrun(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = String::new();
    let l = &c.s.layout;
    let _ = writeln!(
        out,
        "# {} on {} GPUs: DP {} × TP {} × PP {} × CP {}{}. Run on every node.",
        c.name,
        c.world,
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        if l.ep > 1 && l.expert_tp == l.tp {
            format!(" (EP {} inside DP × CP)", l.ep)
        } else if l.ep > 1 {
            // MoE parallel folding (crate::parallel::fold): ETP × EP regroup the TP × CP × DP ranks.
            format!(
                " (EP {} × expert-TP {} folded over TP × CP × DP)",
                l.ep, l.expert_tp
            )
        } else {
            String::new()
        }
    );
    let flags = match torchrun_flags(c) {
        Ok(f) => f,
        Err(why) => {
            notes.push(why.clone());
            let _ = writeln!(out, "# Not launchable as planned: {why}");
            return (out, notes);
        }
    };
    if flags.iter().any(|f| f.contains("$HEAD_NODE_ADDR")) {
        let _ = writeln!(out, "export HEAD_NODE_ADDR=\"<head-node-address>\"");
        let _ = writeln!(out, "export JOB_ID=\"<unique-job-id>\"");
    }
    let _ = writeln!(out, "TRAIN_SCRIPT=\"<path/to/train.py>\"");
    if l.tp > 1 {
        let _ = writeln!(
            out,
            "# Megatron/TE order TP communication behind compute only with one hardware queue."
        );
        let _ = writeln!(out, "export CUDA_DEVICE_MAX_CONNECTIONS=1");
    }
    let _ = writeln!(
        out,
        "# Fewer allocator splits: the plan reserves {:.0}% for fragmentation.",
        c.s.overheads.allocator_fraction * 100.0
    );
    let _ = writeln!(
        out,
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    );
    let mut parts = vec!["torchrun".to_string()];
    parts.extend(flags);
    parts.push("\"$TRAIN_SCRIPT\" \"$@\"".to_string());
    shell_line(&mut out, &parts);
    if c.world < c.s.cluster.world_size() {
        notes.push(format!(
            "The layout uses {} of the cluster's {} GPUs.",
            c.world,
            c.s.cluster.world_size()
        ));
    }
    notes.push(
        "torchrun only starts the processes; the parallel degrees come from the training \
         script's own configuration (see the other exports)."
            .to_string(),
    );
    (out, notes)
}
