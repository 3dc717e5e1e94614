//! Loopback backends for the checker benchmark (`compat-tests/bench-checkers.sh`):
//! listens on every `ADDR:PORT` given (files of one `ADDR PORT KIND` per
//! line, KIND `tcp` or `http`), answers HTTP requests with a small page, and
//! every second prints how many TCP connections were accepted and HTTP
//! answers sent, so the checks a checker really made are counted outside it, the
//! same way for keepalived and keepalived-rs.
//!
//!   bench_backends LIST_FILE [SECONDS]

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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let mut n = 0;
        for line in list.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 3 {
                continue;
            }
            let l = match TcpListener::bind(format!("{}:{}", f[0], f[1])).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("bind {}:{}: {e}", f[0], f[1]);
                    continue;
                }
            };
            n += 1;
            let http = f[2] == "http";
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
