//! Loopback backends for the checker benchmark (`compat-tests/bench-checkers.sh`):
//! listens on every `ADDR:PORT` given (files of one `ADDR PORT KIND` per
//! line, KIND `tcp` or `http`), answers HTTP requests with a small page, and
//! every second prints how many TCP connections were accepted and HTTP
//! answers sent, so the checks a checker really made are counted outside it, the
//! same way for keepalived and keepalived-rs.
//!
//!   bench_backends LIST_FILE [SECONDS] [--any]
//!
//! With `--any` each port of the list is listened on once, on the wildcard
//! address (and with SO_REUSEPORT, so that several of these processes share
//! it), as a backend host has one listener for all its addresses; the
//! addresses of the list must then be local (127.0.0.0/8 on loopback) and
//! one port has one kind. Without it, one listener per address: 50,000
//! listening sockets in one kernel, where every lookup of a listener (a
//! SYN's, and that of a SYN-ACK for a port nobody listens on) walks chains
//! of them, cold in the cache, a cost no director whose backends are other
//! hosts pays.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Connections accepted on `tcp` listeners: TCP_CHECKs made.
static TCP_CHECKS: AtomicU64 = AtomicU64::new(0);
/// Answers sent on `http` listeners: HTTP_GETs made.
static HTTP_CHECKS: AtomicU64 = AtomicU64::new(0);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let list = std::fs::read_to_string(args.get(1).expect("usage: bench_backends LIST [SECONDS]"))
        .expect("read list");
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3600);
    let any = args.iter().any(|a| a == "--any");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let mut n = 0;
        let mut ports: Vec<(String, bool)> = Vec::new();
        for line in list.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 3 {
                continue;
            }
            let http = f[2] == "http";
            if any {
                match ports.iter().find(|(p, _)| p == f[1]) {
                    Some((_, h)) if *h != http => panic!("port {} listed as tcp and http", f[1]),
                    Some(_) => continue,
                    None => ports.push((f[1].to_string(), http)),
                }
            }
            let at = if any {
                format!("0.0.0.0:{}", f[1])
            } else {
                format!("{}:{}", f[0], f[1])
            };
            let l = match listen(&at, any) {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("bind {}:{}: {e}", f[0], f[1]);
                    continue;
                }
            };
            n += 1;
            tokio::spawn(async move {
                loop {
                    let Ok((mut s, _)) = l.accept().await else {
                        continue;
                    };
                    if !http {
                        TCP_CHECKS.fetch_add(1, Ordering::Relaxed);
                    } else {
                        tokio::spawn(async move {
                            let mut b = [0u8; 1024];
                            let mut got = Vec::new();
                            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                                match s.read(&mut b).await {
                                    Ok(0) | Err(_) => return,
                                    Ok(k) => got.extend_from_slice(&b[..k]),
                                }
                            }
                            if s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                                .await
                                .is_ok()
                            {
                                HTTP_CHECKS.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    }
                }
            });
        }
        println!("@@LISTENING {n}");
        let start = Arc::new(tokio::time::Instant::now());
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        for _ in 0..seconds {
            tick.tick().await;
            println!(
                "@@COUNT {:.1} {} {}",
                start.elapsed().as_secs_f64(),
                TCP_CHECKS.load(Ordering::Relaxed),
                HTTP_CHECKS.load(Ordering::Relaxed)
            );
        }
    });
}

/// A listener on `at` (with SO_REUSEPORT when `shared`), its backlog the
/// most the kernel allows (one listener takes every check of a port).
fn listen(at: &str, shared: bool) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let addr: std::net::SocketAddr = at.parse().map_err(std::io::Error::other)?;
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    if shared {
        s.set_reuse_port(true)?;
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(65535)?;
    TcpListener::from_std(s.into())
}
