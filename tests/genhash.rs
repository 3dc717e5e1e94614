//! genhash side by side with keepalived 2.2.7's: the same loopback server,
//! the same arguments, the same output and exit code.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

/// Serves `answer` to every connection, forever, on a thread.
fn serve(answer: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&b[..n]),
                }
            }
            let _ = s.write_all(answer);
        }
    });
    port
}

fn run(bin: &str, args: &[String]) -> (String, String, Option<i32>) {
    let o = Command::new(bin).args(args).output().expect("run genhash");
    let clean = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.starts_with("Global response time"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(bin, "GENHASH")
    };
    (clean(&o.stdout), clean(&o.stderr), o.status.code())
}

#[test]
#[cfg_attr(
    not(feature = "reference"),
    ignore = "needs keepalived 2.2.7 installed: cargo test --features reference"
)]
fn genhash_matches_keepalived_s() {
    let theirs = "/usr/bin/genhash";
    // Like the other side-by-side tests: no reference, no verdict.
    assert!(
        std::path::Path::new(theirs).exists(),
        "keepalived's genhash is needed (apt-get install keepalived; .ci/run does)"
    );
    let ours = env!("CARGO_BIN_EXE_genhash");
    let ok = serve(b"HTTP/1.0 200 OK\r\nServer: t\r\n\r\nhello genhash\n");
    let bounded = serve(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello world");
    let missing = serve(b"HTTP/1.0 404 Not Found\r\n\r\nnope");
    let empty = serve(b"");
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cases: Vec<Vec<String>> = [
        format!("-s 127.0.0.1 -p {ok} -u /index.html"),
        format!("-s 127.0.0.1 -p {ok} -u / -v"),
        format!("--server 127.0.0.1 --port {ok} --url / --use-virtualhost www.test -P 1.1"),
        format!("-s 127.0.0.1 -p {bounded} -u /"),
        format!("-s 127.0.0.1 -p {bounded} -u / -v"),
        format!("-s 127.0.0.1 -p {missing} -u /"),
        format!("-s 127.0.0.1 -p {empty} -u /"),
        format!("-s 127.0.0.1 -p {refused} -u / -t 1"),
        format!("-s 127.0.0.1 -p {ok} -u / -S -t 1"),
        "-h".to_string(),
        "-s 127.0.0.1 -u /".to_string(),
    ]
    .iter()
    .map(|c| c.split(' ').map(String::from).collect())
    .collect();
    for args in &cases {
        let a = run(theirs, args);
        let b = run(ours, args);
        assert_eq!(a, b, "genhash {}", args.join(" "));
    }
}
