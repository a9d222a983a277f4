//! A small TCP exchange that hands rank 0's NCCL unique id to every other rank
//! (nccl-tests uses MPI for this) and gathers every rank's host and GPU.
//!
//! Rank 0 listens; the others connect, say who they are, and wait. When all
//! have joined, rank 0 answers each with the payload and the list of peers.
//! A rank that never joins is named in the error after the timeout.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// What each rank tells the others about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerInfo {
    /// Global rank.
    pub rank: u32,
    /// Host name.
    pub host: String,
    /// GPU name.
    pub gpu_name: String,
    /// GPU memory, bytes.
    pub memory_bytes: u64,
    /// Compute capability, "9.0".
    pub compute_capability: String,
}

const MAGIC: &[u8; 4] = b"GPB1";
/// Largest frame accepted (the peer list of a million ranks fits well inside).
const MAX_FRAME_BYTES: u32 = 256 << 20;

fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
        .collect()
}

fn encode_peer(p: &PeerInfo) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\n",
        p.rank,
        clean(&p.host),
        clean(&p.gpu_name),
        p.memory_bytes,
        clean(&p.compute_capability)
    )
}

fn decode_peers(text: &str) -> Result<Vec<PeerInfo>, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() != 5 {
                return Err(format!("malformed peer line '{line}'"));
            }
            Ok(PeerInfo {
                rank: f[0].parse().map_err(|_| format!("bad rank in '{line}'"))?,
                host: f[1].to_string(),
                gpu_name: f[2].to_string(),
                memory_bytes: f[3]
                    .parse()
                    .map_err(|_| format!("bad memory in '{line}'"))?,
                compute_capability: f[4].to_string(),
            })
        })
        .collect()
}

fn write_frame(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(MAGIC)?;
    stream.write_all(&(bytes.len() as u32).to_be_bytes())?;
    stream.write_all(bytes)?;
    stream.flush()
}

fn read_frame(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut head = [0u8; 8];
    stream
        .read_exact(&mut head)
        .map_err(|e| format!("reading frame header: {e}"))?;
    if &head[..4] != MAGIC {
        return Err("peer is not gpu-bench (bad magic); is another service on this port?".into());
    }
    let len = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_FRAME_BYTES {
        return Err(format!("frame of {len} bytes is too large"));
    }
    let mut body = vec![0u8; len as usize];
    stream
        .read_exact(&mut body)
        .map_err(|e| format!("reading frame body: {e}"))?;
    Ok(body)
}

/// Rank 0: accept `world_size − 1` ranks on `port`, then send each `payload`
/// and the list of all peers. Returns every rank's info in rank order.
pub fn serve(
    port: u16,
    world_size: u32,
    own: PeerInfo,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<PeerInfo>, String> {
    let listener = TcpListener::bind(("0.0.0.0", port)).map_err(|e| {
        format!("rank 0 cannot listen on port {port}: {e} (choose another with --port)")
    })?;
    serve_on(listener, world_size, own, payload, timeout)
}

/// [`serve`] on a listener already bound (tests bind port 0).
pub fn serve_on(
    listener: TcpListener,
    world_size: u32,
    own: PeerInfo,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<PeerInfo>, String> {
    let deadline = Instant::now() + timeout;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listener: {e}"))?;
    let mut peers: Vec<Option<PeerInfo>> = vec![None; world_size as usize];
    // Through the wire format, so rank 0's entry is cleaned like the others'.
    peers[0] = decode_peers(&encode_peer(&own))?.pop();
    let mut streams: Vec<TcpStream> = Vec::new();
    while peers.iter().any(Option::is_none) {
        if Instant::now() >= deadline {
            let missing: Vec<String> = peers
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_none())
                .map(|(r, _)| r.to_string())
                .collect();
            return Err(format!(
                "rank(s) {} never joined within {} s: check that every rank was started, that MASTER_ADDR \
                 names rank 0's host, and that port {} is reachable (firewall); --join-timeout sets the wait",
                missing.join(", "),
                timeout.as_secs(),
                listener.local_addr().map(|a| a.port()).unwrap_or(0)
            ));
        }
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let hello = match read_frame(&mut stream) {
                    Ok(h) => h,
                    Err(_) => continue,
                };
                let text = String::from_utf8_lossy(&hello);
                let info = match decode_peers(&text) {
                    Ok(mut v) if v.len() == 1 => v.remove(0),
                    _ => continue,
                };
                let r = info.rank as usize;
                if r == 0 || r >= peers.len() {
                    return Err(format!(
                        "a process said it is rank {r} of a run of {world_size}: are two runs sharing this port?"
                    ));
                }
                if peers[r].is_some() {
                    return Err(format!("two processes said they are rank {r}"));
                }
                peers[r] = Some(info);
                streams.push(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("accepting a rank: {e}")),
        }
    }
    let peers: Vec<PeerInfo> = peers.into_iter().flatten().collect();
    let listing: String = peers.iter().map(encode_peer).collect();
    let mut reply = Vec::with_capacity(4 + payload.len() + listing.len());
    reply.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    reply.extend_from_slice(payload);
    reply.extend_from_slice(listing.as_bytes());
    for stream in &mut streams {
        write_frame(stream, &reply).map_err(|e| format!("answering a rank: {e}"))?;
    }
    Ok(peers)
}

/// Ranks other than 0: connect to rank 0 at `addr:port` (retrying until the
/// timeout, since rank 0 may start later), introduce yourself, and wait for the
/// payload and the peer list.
pub fn join(
    addr: &str,
    port: u16,
    me: &PeerInfo,
    timeout: Duration,
) -> Result<(Vec<u8>, Vec<PeerInfo>), String> {
    let deadline = Instant::now() + timeout;
    let target = format!("{addr}:{port}");
    let mut stream = loop {
        let attempt = target
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve MASTER_ADDR '{addr}': {e}"))
            .and_then(|mut addrs| {
                addrs
                    .next()
                    .ok_or_else(|| format!("MASTER_ADDR '{addr}' resolves to nothing"))
            })
            .and_then(|sa| {
                TcpStream::connect_timeout(&sa, Duration::from_secs(2)).map_err(|e| e.to_string())
            });
        match attempt {
            Ok(s) => break s,
            Err(e) if e.starts_with("cannot resolve") || e.contains("resolves to nothing") => {
                return Err(e)
            }
            Err(e) => {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "rank {} could not reach rank 0 at {target} within {} s ({e}): is rank 0 running, \
                         and is MASTER_ADDR its host?",
                        me.rank,
                        timeout.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    write_frame(&mut stream, encode_peer(me).as_bytes())
        .map_err(|e| format!("sending to rank 0: {e}"))?;
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let _ = stream.set_read_timeout(Some(remaining));
    let reply = read_frame(&mut stream).map_err(|e| {
        format!(
            "rank {} waited for rank 0's answer: {e} (another rank may never have joined)",
            me.rank
        )
    })?;
    if reply.len() < 4 {
        return Err("short answer from rank 0".into());
    }
    let n = u32::from_be_bytes([reply[0], reply[1], reply[2], reply[3]]) as usize;
    if reply.len() < 4 + n {
        return Err("truncated answer from rank 0".into());
    }
    let payload = reply[4..4 + n].to_vec();
    let peers = decode_peers(&String::from_utf8_lossy(&reply[4 + n..]))?;
    Ok((payload, peers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(rank: u32) -> PeerInfo {
        PeerInfo {
            rank,
            host: format!("host{}", rank / 2),
            gpu_name: "Test\tGPU".into(),
            memory_bytes: 80 << 30,
            compute_capability: "9.0".into(),
        }
    }

    #[test]
    fn every_rank_gets_the_payload_and_peer_list() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let payload: Vec<u8> = (0..128u8).collect();
        let p = payload.clone();
        let server =
            std::thread::spawn(move || serve_on(listener, 4, peer(0), &p, Duration::from_secs(20)));
        let clients: Vec<_> = (1..4)
            .map(|r| {
                std::thread::spawn(move || {
                    join("127.0.0.1", port, &peer(r), Duration::from_secs(20))
                })
            })
            .collect();
        let all = server.join().unwrap().unwrap();
        assert_eq!(all.len(), 4);
        assert_eq!(all[3].host, "host1");
        assert_eq!(all[1].gpu_name, "Test GPU");
        for c in clients {
            let (got, peers) = c.join().unwrap().unwrap();
            assert_eq!(got, payload);
            assert_eq!(peers, all);
        }
    }

    #[test]
    fn a_rank_that_never_joins_is_named() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            serve_on(listener, 3, peer(0), b"id", Duration::from_millis(1500))
        });
        let client =
            std::thread::spawn(move || join("127.0.0.1", port, &peer(1), Duration::from_secs(5)));
        let err = server.join().unwrap().unwrap_err();
        assert!(err.contains("rank(s) 2 never joined"), "{err}");
        assert!(client.join().unwrap().is_err());
    }

    #[test]
    fn unreachable_rank_zero_is_a_clear_error() {
        // Bind then drop to get a port nobody listens on.
        let port = TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = join("127.0.0.1", port, &peer(1), Duration::from_millis(500)).unwrap_err();
        assert!(err.contains("could not reach rank 0"), "{err}");
    }
}
