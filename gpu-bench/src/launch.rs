//! How this process was launched: alone (driving `--gpus N` GPUs), or as one
//! rank of many under torchrun, srun or mpirun.

use std::collections::HashMap;

/// Which launcher set the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// No launcher: one process drives every GPU it uses.
    Single,
    /// torchrun / torch.distributed (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
    Torchrun,
    /// Slurm srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
    Slurm,
    /// Open MPI mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK).
    OpenMpi,
}

/// One process's place in the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchInfo {
    /// Who launched it.
    pub launcher: Launcher,
    /// Global rank of this process.
    pub rank: u32,
    /// Processes in the run.
    pub world_size: u32,
    /// Rank within this node: the GPU ordinal this process drives.
    pub local_rank: u32,
    /// Host of rank 0, where the NCCL id is served (None when single).
    pub master_addr: Option<String>,
    /// Port the NCCL id is served on.
    pub port: u16,
}

/// Port offset from MASTER_PORT: torchrun's own store already listens on MASTER_PORT.
pub const PORT_OFFSET: u16 = 1;
/// Port used when neither `--port` nor MASTER_PORT is given.
pub const DEFAULT_PORT: u16 = 29_601;

fn get_u32(env: &HashMap<String, String>, key: &str) -> Result<Option<u32>, String> {
    match env.get(key) {
        None => Ok(None),
        Some(v) => {
            v.trim().parse::<u32>().map(Some).map_err(|_| {
                format!("environment variable {key}='{v}' is not a non-negative integer")
            })
        }
    }
}

/// Reads the launcher variables from `env`. `port_override` and `addr_override`
/// come from `--port` and `--master-addr`.
///
/// Errors name the variable that is missing or malformed.
pub fn from_env(
    env: &HashMap<String, String>,
    addr_override: Option<&str>,
    port_override: Option<u16>,
) -> Result<LaunchInfo, String> {
    let candidates = [
        (Launcher::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"),
        (
            Launcher::OpenMpi,
            "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE",
            "OMPI_COMM_WORLD_LOCAL_RANK",
        ),
        (
            Launcher::Slurm,
            "SLURM_PROCID",
            "SLURM_NTASKS",
            "SLURM_LOCALID",
        ),
    ];
    for (launcher, rank_key, size_key, local_key) in candidates {
        let Some(rank) = get_u32(env, rank_key)? else {
            continue;
        };
        let world_size = get_u32(env, size_key)?
            .ok_or_else(|| format!("{rank_key} is set but {size_key} is not"))?;
        if world_size == 0 {
            return Err(format!("{size_key} must be at least 1"));
        }
        if rank >= world_size {
            return Err(format!(
                "{rank_key}={rank} is not below {size_key}={world_size}"
            ));
        }
        let local_rank = get_u32(env, local_key)?
            .ok_or_else(|| format!("{rank_key} is set but {local_key} is not"))?;
        let master_addr = addr_override
            .map(str::to_string)
            .or_else(|| env.get("MASTER_ADDR").cloned());
        if world_size > 1 && master_addr.is_none() {
            return Err(format!(
                "launched by {launcher:?} with {world_size} ranks but MASTER_ADDR is not set: \
                 export MASTER_ADDR=<host of rank 0> or pass --master-addr"
            ));
        }
        let port = match port_override {
            Some(p) => p,
            None => match env.get("MASTER_PORT") {
                Some(p) => p
                    .trim()
                    .parse::<u16>()
                    .ok()
                    .and_then(|p| p.checked_add(PORT_OFFSET))
                    .ok_or_else(|| format!("MASTER_PORT='{p}' is not a port number below 65535"))?,
                None => DEFAULT_PORT,
            },
        };
        return Ok(LaunchInfo {
            launcher,
            rank,
            world_size,
            local_rank,
            master_addr,
            port,
        });
    }
    Ok(LaunchInfo {
        launcher: Launcher::Single,
        rank: 0,
        world_size: 1,
        local_rank: 0,
        master_addr: None,
        port: port_override.unwrap_or(DEFAULT_PORT),
    })
}

/// The current process environment as a map.
pub fn process_env() -> HashMap<String, String> {
    std::env::vars().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn torchrun_variables_and_port_offset() {
        let e = env(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "16"),
            ("LOCAL_RANK", "3"),
            ("MASTER_ADDR", "node0"),
            ("MASTER_PORT", "29500"),
        ]);
        let l = from_env(&e, None, None).unwrap();
        assert_eq!(l.launcher, Launcher::Torchrun);
        assert_eq!((l.rank, l.world_size, l.local_rank), (3, 16, 3));
        assert_eq!(l.master_addr.as_deref(), Some("node0"));
        assert_eq!(l.port, 29501);
        assert_eq!(
            from_env(&e, Some("10.0.0.1"), Some(4000)).unwrap().port,
            4000
        );
    }

    #[test]
    fn slurm_and_openmpi_variables() {
        let s = env(&[
            ("SLURM_PROCID", "9"),
            ("SLURM_NTASKS", "16"),
            ("SLURM_LOCALID", "1"),
            ("MASTER_ADDR", "n0"),
        ]);
        let l = from_env(&s, None, None).unwrap();
        assert_eq!(l.launcher, Launcher::Slurm);
        assert_eq!((l.rank, l.world_size, l.local_rank), (9, 16, 1));
        assert_eq!(l.port, DEFAULT_PORT);
        let o = env(&[
            ("OMPI_COMM_WORLD_RANK", "2"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_LOCALID", "0"),
        ]);
        // mpirun inside a Slurm allocation: the MPI ranks are the processes.
        let l = from_env(&o, Some("h0"), None).unwrap();
        assert_eq!(l.launcher, Launcher::OpenMpi);
        assert_eq!((l.rank, l.world_size), (2, 4));
    }

    #[test]
    fn no_launcher_is_single() {
        let l = from_env(&env(&[]), None, None).unwrap();
        assert_eq!(l.launcher, Launcher::Single);
        assert_eq!((l.rank, l.world_size), (0, 1));
    }

    #[test]
    fn errors_name_the_variable() {
        let e = env(&[("RANK", "x"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")]);
        assert!(from_env(&e, None, None).unwrap_err().contains("RANK='x'"));
        let e = env(&[("RANK", "0"), ("LOCAL_RANK", "0")]);
        assert!(from_env(&e, None, None).unwrap_err().contains("WORLD_SIZE"));
        let e = env(&[("RANK", "2"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")]);
        assert!(from_env(&e, None, None).unwrap_err().contains("not below"));
        let e = env(&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")]);
        assert!(from_env(&e, None, None)
            .unwrap_err()
            .contains("MASTER_ADDR"));
        let e = env(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("MASTER_ADDR", "a"),
            ("MASTER_PORT", "65535"),
        ]);
        assert!(from_env(&e, None, None)
            .unwrap_err()
            .contains("MASTER_PORT"));
    }
}
