//! Every checker type against real loopback servers, well-behaved and
//! misbehaving: the configuration is loaded, planned and probed exactly as
//! the daemon does, and the verdict is keepalived's.

use keepalived::check::engine::{plan, NetProber, Outcome, PlanOptions, Planned, Prober};
use keepalived::config::load_str;
use keepalived::services::scripts::Scripts;
use md5::{Digest, Md5};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};

fn planned(checker: &str, port: u16) -> Planned {
    // Scripts run as whoever runs the tests.
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    let text = format!(
        "global_defs {{\n enable_script_security\n script_user {me}\n}}\n\
         virtual_server 10.0.0.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
         real_server 127.0.0.1 {port} {{\n {checker}\n }}\n}}\n"
    );
    let l = load_str(&text);
    assert!(
        l.diagnostics.items().is_empty(),
        "{:?}",
        l.diagnostics.items()
    );
    let (p, errors) = plan(&l.config, &PlanOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
    p.checks.first().cloned().expect("one check")
}

async fn probe(c: &Planned, url: usize) -> Outcome {
    NetProber::new(Scripts::new(4)).probe(c, url, 1).await
}

fn failed_with(o: &Outcome, words: &str) -> bool {
    match o {
        Err(e) => e.to_string().contains(words),
        Ok(_) => false,
    }
}

/// A TCP server that reads the request head, then does `answer`.
async fn server<F, Fut>(answer: F) -> u16
where
    F: Fn(tokio::net::TcpStream, Vec<u8>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut b = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&b[..n]),
                    }
                }
                answer(s, req).await;
            });
        }
    });
    port
}

async fn raw(bytes: &'static [u8]) -> u16 {
    server(move |mut s, _| async move {
        let _ = s.write_all(bytes).await;
    })
    .await
}

fn http(port: u16, extra: &str) -> Planned {
    planned(
        &format!("HTTP_GET {{\n connect_timeout 1\n url {{\n path /x\n {extra}\n }}\n }}"),
        port,
    )
}

#[tokio::test]
async fn tcp_check_passes_on_connect_and_fails_on_refusal() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    // A listener that never accepts still completes the handshake.
    assert!(
        probe(&planned("TCP_CHECK {\n connect_timeout 1\n }", port), 0)
            .await
            .is_ok()
    );
    drop(l);
    let o = probe(&planned("TCP_CHECK {\n connect_timeout 1\n }", port), 0).await;
    assert!(failed_with(&o, "refused"), "{o:?}");
}

#[tokio::test]
async fn http_get_sends_keepalived_s_request_and_judges_status() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let port = server(move |mut s, req| {
        s2.lock().unwrap().push(req);
        async move {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nServer: t\r\n\r\nbody")
                .await;
        }
    })
    .await;
    assert!(probe(&http(port, ""), 0).await.is_ok());
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        String::from_utf8(req).unwrap(),
        format!("GET /x HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: 127.0.0.1:{port}\r\n\r\n")
    );
    // status_code lists and ranges.
    assert!(probe(&http(port, "status_code 201-299 200"), 0)
        .await
        .is_ok());
    let o = probe(&http(port, "status_code 300"), 0).await;
    assert!(failed_with(&o, "status code"), "{o:?}");
}

#[tokio::test]
async fn http_get_misbehaving_servers() {
    // Accepts and never answers: cut at connect_timeout.
    let hang = server(|s, _| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(s);
    })
    .await;
    let t = Instant::now();
    let o = probe(&http(hang, ""), 0).await;
    assert!(failed_with(&o, "timeout"), "{o:?}");
    assert!(t.elapsed() < Duration::from_secs(3));

    // RST after accept.
    let rst = server(|s, _| async move {
        let s = s.into_std().unwrap();
        socket2::SockRef::from(&s)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(s);
    })
    .await;
    let o = probe(&http(rst, ""), 0).await;
    assert!(o.is_err(), "{o:?}");

    // Garbage and truncated status lines.
    let o = probe(&http(raw(b"garbage\r\n\r\n").await, ""), 0).await;
    assert!(failed_with(&o, "status code"), "{o:?}");
    let o = probe(&http(raw(b"HTTP/1.1 20").await, ""), 0).await;
    assert!(failed_with(&o, "no data"), "{o:?}");
    // No space after the code: keepalived 2.2.7 reads no status code
    // (guest scenario check-http-raw).
    let o = probe(&http(raw(b"HTTP/1.0 200\r\n\r\n").await, ""), 0).await;
    assert!(failed_with(&o, "status code"), "{o:?}");
    // Early close without a byte.
    let o = probe(&http(raw(b"").await, ""), 0).await;
    assert!(failed_with(&o, "no data"), "{o:?}");

    // Oversized headers: more than 4095 bytes before the blank line.
    let mut big = b"HTTP/1.0 200 OK\r\nX-Big: ".to_vec();
    big.resize(6000, b'a');
    big.extend_from_slice(b"\r\n\r\n");
    let big: &'static [u8] = Box::leak(big.into_boxed_slice());
    let o = probe(&http(raw(big).await, ""), 0).await;
    assert!(failed_with(&o, "no data"), "{o:?}");
}

#[tokio::test]
async fn http_get_digest_over_slow_and_chunked_bodies() {
    let body = b"hello world";
    let digest = hex(&Md5::digest(body));
    // A slow body arrives in pieces, each within connect_timeout.
    let slow = server(|mut s, _| async move {
        let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nhello").await;
        for part in [&b" wor"[..], b"ld"] {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = s.write_all(part).await;
        }
    })
    .await;
    assert!(probe(&http(slow, &format!("digest {digest}")), 0)
        .await
        .is_ok());
    // Content-Length bounds the digest input.
    let extra = raw(b"HTTP/1.0 200 OK\r\nContent-Length: 11\r\n\r\nhello worldTRAILING").await;
    assert!(probe(&http(extra, &format!("digest {digest}")), 0)
        .await
        .is_ok());
    // Chunked framing is part of what keepalived hashes.
    let chunked = b"b\r\nhello world\r\n0\r\n\r\n";
    let port =
        raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nb\r\nhello world\r\n0\r\n\r\n")
            .await;
    let o = probe(&http(port, &format!("digest {digest}")), 0).await;
    assert!(failed_with(&o, "MD5"), "{o:?}");
    assert!(probe(
        &http(port, &format!("digest {}", hex(&Md5::digest(chunked)))),
        0
    )
    .await
    .is_ok());
}

#[tokio::test]
async fn http_get_regex_and_virtualhost() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let port = server(move |mut s, req| {
        s2.lock()
            .unwrap()
            .push(String::from_utf8_lossy(&req).to_string());
        async move {
            let _ = s
                .write_all(b"HTTP/1.0 200 OK\r\n\r\nstatus: all good")
                .await;
        }
    })
    .await;
    let c = planned(
        "HTTP_GET {\n connect_timeout 1\n virtualhost www.example.org\n http_protocol 1.1\n \
         url {\n path /a\n regex \"all go+d\"\n }\n url {\n path /b\n regex \"all good\"\n regex_no_match\n }\n }",
        port,
    );
    assert!(probe(&c, 0).await.is_ok());
    let o = probe(&c, 1).await;
    assert!(failed_with(&o, "Regex"), "{o:?}");
    let req = seen.lock().unwrap()[0].clone();
    assert!(req.contains("Host: www.example.org\r\n"), "{req}");
    assert!(req.contains("Connection: close\r\n"), "{req}");
    assert!(req.starts_with("GET /a HTTP/1.1\r\n"), "{req}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn tls_server(sni_seen: Arc<Mutex<Vec<Option<String>>>>) -> u16 {
    let ck = rcgen::generate_simple_self_signed(vec!["backend.test".into()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::try_from(ck.signing_key.serialize_der()).unwrap();
    tls_server_with(vec![cert], key, sni_seen).await
}

/// A TLS server presenting `chain`, answering 200 to any request.
async fn tls_server_with(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    sni_seen: Arc<Mutex<Vec<Option<String>>>>,
) -> u16 {
    let cert = chain;
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(cert, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            let acceptor = acceptor.clone();
            let sni_seen = sni_seen.clone();
            tokio::spawn(async move {
                let Ok(mut t) = acceptor.accept(s).await else {
                    return;
                };
                sni_seen
                    .lock()
                    .unwrap()
                    .push(t.get_ref().1.server_name().map(String::from));
                let mut b = [0u8; 1024];
                let _ = t.read(&mut b).await;
                let _ = t.write_all(b"HTTP/1.0 200 OK\r\n\r\nsecure").await;
                let _ = t.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test]
async fn ssl_get_accepts_any_certificate_and_sends_sni_only_when_asked() {
    let sni = Arc::new(Mutex::new(Vec::new()));
    let port = tls_server(sni.clone()).await;
    let plain = planned(
        "SSL_GET {\n connect_timeout 2\n url {\n path /\n }\n }",
        port,
    );
    assert!(probe(&plain, 0).await.is_ok());
    let with_sni = planned(
        "SSL_GET {\n connect_timeout 2\n enable_sni\n virtualhost backend.test\n url {\n path /\n }\n }",
        port,
    );
    assert!(probe(&with_sni, 0).await.is_ok());
    assert_eq!(
        *sni.lock().unwrap(),
        vec![None, Some("backend.test".to_string())]
    );
    // A plain HTTP server on the TLS port: the handshake fails.
    let http_port = raw(b"HTTP/1.0 200 OK\r\n\r\n").await;
    let o = probe(
        &planned(
            "SSL_GET {\n connect_timeout 1\n url {\n path /\n }\n }",
            http_port,
        ),
        0,
    )
    .await;
    assert!(failed_with(&o, "SSL"), "{o:?}");
}

async fn udp_server(reply: Option<&'static [u8]>) -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = s.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut b = [0u8; 2048];
        loop {
            let (_, from) = s.recv_from(&mut b).await.unwrap();
            if let Some(r) = reply {
                s.send_to(r, from).await.unwrap();
            }
        }
    });
    port
}

#[tokio::test]
async fn udp_check_replies_silence_and_port_unreachable() {
    let silent = udp_server(None).await;
    assert!(
        probe(&planned("UDP_CHECK {\n connect_timeout 1\n }", silent), 0)
            .await
            .is_ok()
    );
    let o = probe(
        &planned(
            "UDP_CHECK {\n connect_timeout 1\n require_reply\n }",
            silent,
        ),
        0,
    )
    .await;
    assert!(failed_with(&o, "timeout"), "{o:?}");
    let talker = udp_server(Some(b"OK:ready")).await;
    assert!(probe(
        &planned(
            "UDP_CHECK {\n connect_timeout 1\n require_reply 4f4b3a\n }",
            talker
        ),
        0
    )
    .await
    .is_ok());
    assert!(probe(
        &planned(
            "UDP_CHECK {\n connect_timeout 1\n require_reply 4x4b\n }",
            talker
        ),
        0
    )
    .await
    .is_ok());
    let o = probe(
        &planned(
            "UDP_CHECK {\n connect_timeout 1\n require_reply 4f4b3a\n max_reply_length 4\n }",
            talker,
        ),
        0,
    )
    .await;
    assert!(o.is_err(), "longer than max_reply_length: {o:?}");
    // Nobody on the port: the kernel's ICMP port unreachable fails it.
    let closed = {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let o = probe(&planned("UDP_CHECK {\n connect_timeout 1\n }", closed), 0).await;
    assert!(failed_with(&o, "refused"), "{o:?}");
}

async fn dns_server(rcode: u8, wrong_id_first: bool) -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = s.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut b = [0u8; 2048];
        loop {
            let (n, from) = s.recv_from(&mut b).await.unwrap();
            let mut r = b[..n].to_vec();
            r[2] |= 0x80;
            r[3] = (r[3] & 0xf0) | rcode;
            if wrong_id_first {
                let mut w = r.clone();
                w[0] ^= 0xff;
                s.send_to(&w, from).await.unwrap();
            }
            s.send_to(&r, from).await.unwrap();
        }
    });
    port
}

#[tokio::test]
async fn dns_check_rcode_and_ids() {
    let c = |port| {
        planned(
            "DNS_CHECK {\n connect_timeout 1\n type A\n name example.org\n }",
            port,
        )
    };
    assert!(probe(&c(dns_server(0, false).await), 0).await.is_ok());
    assert!(probe(&c(dns_server(0, true).await), 0).await.is_ok());
    let o = probe(&c(dns_server(2, false).await), 0).await;
    assert!(failed_with(&o, "rcode 2"), "{o:?}");
    let o = probe(&c(udp_server(None).await), 0).await;
    assert!(failed_with(&o, "timeout"), "{o:?}");
}

async fn smtp_server(
    banner: &'static [u8],
    helo_reply: &'static [u8],
) -> (u16, Arc<Mutex<String>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let said = Arc::new(Mutex::new(String::new()));
    let s2 = said.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let said = s2.clone();
            tokio::spawn(async move {
                let _ = s.write_all(banner).await;
                let mut b = [0u8; 512];
                for reply in [helo_reply, b"221 bye\r\n"] {
                    let Ok(n) = s.read(&mut b).await else { return };
                    said.lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&b[..n]));
                    let _ = s.write_all(reply).await;
                }
            });
        }
    });
    (port, said)
}

#[tokio::test]
async fn smtp_check_dialogue() {
    let (port, said) = smtp_server(b"220 mx ESMTP\r\n", b"250 mx\r\n").await;
    assert!(probe(
        &planned(
            "SMTP_CHECK {\n connect_timeout 1\n helo_name probe.test\n }",
            port
        ),
        0
    )
    .await
    .is_ok());
    assert_eq!(*said.lock().unwrap(), "HELO probe.test\r\nQUIT\r\n");
    // A multi-line banner fails, as in keepalived.
    let (port, _) = smtp_server(b"220-mx first\r\n220 mx\r\n", b"250 mx\r\n").await;
    let o = probe(&planned("SMTP_CHECK {\n connect_timeout 1\n }", port), 0).await;
    assert!(failed_with(&o, "banner"), "{o:?}");
    let (port, _) = smtp_server(b"220 mx\r\n", b"550 no\r\n").await;
    let o = probe(&planned("SMTP_CHECK {\n connect_timeout 1\n }", port), 0).await;
    assert!(failed_with(&o, "HELO"), "{o:?}");
}

/// Whether this process may open an unprivileged ICMP socket
/// (`net.ipv4.ping_group_range` covers its group).
fn may_ping() -> bool {
    let gid = nix::unistd::getegid().as_raw();
    std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range")
        .ok()
        .and_then(|r| {
            let mut it = r.split_whitespace().map(|v| v.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .is_some_and(|(lo, hi)| lo <= gid && gid <= hi)
}

#[tokio::test]
async fn ping_check_loopback() {
    // As root the daemon widens ping_group_range; so does this test.
    let _range = keepalived::check::ping::PingGroupRange::ensure();
    let o = probe(&planned("PING_CHECK {\n connect_timeout 2\n }", 0), 0).await;
    if may_ping() {
        assert!(o.is_ok(), "{o:?}");
    } else {
        // Not allowed an ICMP socket: keepalived's "no verdict" (a local
        // failure), never a down.
        assert!(matches!(&o, Err(e) if e.is_local()), "{o:?}");
    }
}

fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("krs-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[tokio::test]
async fn misc_check_exit_codes_signals_and_dynamic_weights() {
    let d = tmpdir("misc");
    let misc = |path: &str, extra: &str| {
        planned(
            &format!("MISC_CHECK {{\n misc_path \"{path}\"\n misc_timeout 2\n {extra}\n }}"),
            80,
        )
    };
    assert_eq!(
        probe(&misc(&script(&d, "ok", "exit 0"), ""), 0)
            .await
            .unwrap(),
        None
    );
    let o = probe(&misc(&script(&d, "one", "exit 1"), "misc_dynamic"), 0).await;
    assert!(failed_with(&o, "status 1"), "{o:?}");
    let o = probe(&misc(&script(&d, "twelve", "exit 12"), ""), 0).await;
    assert!(o.is_err(), "12 without misc_dynamic fails: {o:?}");
    assert_eq!(
        probe(&misc(&script(&d, "twelve2", "exit 12"), "misc_dynamic"), 0)
            .await
            .unwrap(),
        Some(12)
    );
    // Files the kernel cannot run go through the shell, as keepalived's
    // system() path; the shell's 126/127 count as success there.
    let noshebang = d.join("noshebang");
    std::fs::write(&noshebang, "exit 0\n").unwrap();
    std::fs::set_permissions(
        &noshebang,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    assert!(probe(&misc(&noshebang.display().to_string(), ""), 0)
        .await
        .is_ok());
    let badinterp = d.join("badinterp");
    std::fs::write(&badinterp, "#!/nonexistent/interpreter\nexit 1\n").unwrap();
    std::fs::set_permissions(
        &badinterp,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    assert!(probe(&misc(&badinterp.display().to_string(), ""), 0)
        .await
        .is_ok());
    let o = probe(&misc(&script(&d, "sig", "kill -9 $$"), ""), 0).await;
    assert!(failed_with(&o, "signal 9"), "{o:?}");
    // Arguments are passed as configured; the environment is cleaned.
    let args = script(
        &d,
        "args",
        "[ \"$1\" = a ] && [ \"$2\" = 'b c' ] && [ -z \"$LD_PRELOAD\" ]",
    );
    std::env::set_var("LD_PRELOAD", "");
    assert!(probe(&misc(&format!("{args} a 'b c'"), ""), 0)
        .await
        .is_ok());
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn misc_check_timeout_kills_the_whole_process_group() {
    let d = tmpdir("misc-hang");
    let pidfile = d.join("grandchild.pid");
    // The script starts a grandchild that would outlive it, then hangs;
    // SIGTERM is ignored so the group needs the SIGKILL.
    let s = script(
        &d,
        "hang",
        &format!(
            "trap '' TERM\n(trap '' TERM; sleep 1000) &\necho $! > {}\nsleep 1000",
            pidfile.display()
        ),
    );
    let c = planned(
        &format!("MISC_CHECK {{\n misc_path \"{s}\"\n misc_timeout 1\n }}"),
        80,
    );
    let t = Instant::now();
    let o = probe(&c, 0).await;
    assert!(failed_with(&o, "timed out"), "{o:?}");
    let took = t.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(10),
        "{took:?}"
    );
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Reaped by init or gone: either way not running.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "grandchild survives: {stat}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn file_check_follows_the_file() {
    use keepalived::services::track_file::{status, FileState, Watch};
    let d = tmpdir("file");
    let f = d.join("weight");
    std::fs::write(&f, "0\n").unwrap();
    let mut w = Watch::new(std::slice::from_ref(&f)).unwrap();
    std::fs::write(&f, "7\n").unwrap();
    let touched = tokio::time::timeout(Duration::from_secs(5), w.changed())
        .await
        .unwrap()
        .unwrap();
    assert!(touched.contains(&f), "{touched:?}");
    let v = keepalived::services::track_file::read_value(&f).unwrap();
    assert_eq!(status(v, 2, false), FileState::Weight(14));
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn bindto_is_the_source_address() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let c = planned(
        "TCP_CHECK {\n connect_timeout 1\n bindto 127.0.0.9\n }",
        port,
    );
    let (o, accepted) = tokio::join!(probe(&c, 0), l.accept());
    assert!(o.is_ok());
    let from: SocketAddr = accepted.unwrap().1;
    assert_eq!(from.ip().to_string(), "127.0.0.9");
}

#[tokio::test]
async fn tcp_check_closes_with_a_reset() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let c = planned("TCP_CHECK {\n connect_timeout 1\n }", port);
    let (o, accepted) = tokio::join!(probe(&c, 0), l.accept());
    assert!(o.is_ok());
    let (mut s, _) = accepted.unwrap();
    let mut b = [0u8; 8];
    // A reset, not an orderly FIN (which would read as 0 bytes).
    let r = s.read(&mut b).await;
    assert_eq!(
        r.map_err(|e| e.kind()),
        Err(std::io::ErrorKind::ConnectionReset)
    );
}

#[tokio::test]
#[cfg_attr(
    not(feature = "root"),
    ignore = "needs root (SO_MARK): cargo test --features root"
)]
async fn fwmark_and_bind_if_are_applied() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let c = planned(
        "TCP_CHECK {\n connect_timeout 1\n fwmark 7\n bind_if lo\n }",
        port,
    );
    let (o, _) = tokio::join!(probe(&c, 0), l.accept());
    assert!(o.is_ok(), "{o:?}");
    // The probe's socket carries both, as the kernel reads them back (a
    // mark or device silently dropped would still connect on loopback).
    let keepalived::check::engine::ProbeKind::Tcp(conn) = &c.kind else {
        panic!("a TCP probe: {:?}", c.kind);
    };
    let s = conn
        .socket(socket2::Type::STREAM, Some(socket2::Protocol::TCP))
        .expect("socket");
    assert_eq!(s.mark().expect("SO_MARK"), 7);
    assert_eq!(
        s.device().expect("SO_BINDTODEVICE").as_deref(),
        Some(&b"lo"[..])
    );
    // A device that does not exist fails locally: no verdict, as keepalived.
    let c = planned(
        "TCP_CHECK {\n connect_timeout 1\n bind_if nosuchdev0\n }",
        port,
    );
    let o = probe(&c, 0).await;
    assert!(matches!(&o, Err(e) if e.is_local()), "{o:?}");
}

#[tokio::test]
async fn file_check_drives_the_engine() {
    use keepalived::check::engine::{Change, Engine, Jitter};
    use keepalived::health::Tracker;
    let d = tmpdir("file-engine");
    let f = d.join("state");
    std::fs::write(&f, "0\n").unwrap();
    let text = format!(
        "track_file tf {{\n file {}\n weight 0\n}}\n\
         virtual_server 10.0.0.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
         real_server 127.0.0.1 80 {{\n FILE_CHECK {{\n track_file tf\n }}\n }}\n}}\n",
        f.display()
    );
    let l = load_str(&text);
    assert!(
        l.diagnostics.items().is_empty(),
        "{:?}",
        l.diagnostics.items()
    );
    let (p, _) = plan(&l.config, &PlanOptions::default());
    let (_, health) = Tracker::start(&l.config, &p);
    assert!(health.vs[0].rs[0].alive, "0 with weight 0 is no fault");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let engine = Engine::start(
        &p,
        Arc::new(NetProber::new(Scripts::new(1))),
        tx,
        Jitter::with_seed(1),
    );
    // Non-zero with weight 0: fault, the checker goes down.
    tokio::time::sleep(Duration::from_millis(100)).await;
    std::fs::write(&f, "1\n").unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ev.change, Change::Down);
    // Deleted: 0 again, up.
    std::fs::remove_file(&f).unwrap();
    let mut up = false;
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
        if ev.change == Change::Up {
            up = true;
            break;
        }
    }
    assert!(up);
    engine.stop().await;
    std::fs::remove_dir_all(&d).unwrap();
}

#[tokio::test]
async fn http_get_ends_with_a_reset_after_the_server_closes() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let port = server(move |mut s, _| {
        let tx = tx.clone();
        async move {
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nok").await;
            // Half-close: the checker sees EOF; what comes back is ours.
            let _ = s.shutdown().await;
            let mut b = [0u8; 8];
            let r = s.read(&mut b).await.map_err(|e| e.kind());
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(r);
            }
        }
    })
    .await;
    assert!(probe(&http(port, ""), 0).await.is_ok());
    let r = tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r, Err(std::io::ErrorKind::ConnectionReset));
}

#[tokio::test]
async fn http_get_that_keeps_receiving_ends_at_its_deadline() {
    // A byte every 50 ms, forever: each read is in time, the check is not.
    let port = server(|mut s, _| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n")
            .await;
        loop {
            if s.write_all(b"x").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let c = planned(
        "HTTP_GET {\n connect_timeout 0.2\n url {\n path /x\n }\n }",
        port,
    );
    let t0 = Instant::now();
    let o = probe(&c, 0).await;
    let took = t0.elapsed();
    assert!(failed_with(&o, "HTTP check deadline"), "{o:?}");
    // 10 x connect_timeout (keepalived's timer alone would never fire).
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

#[tokio::test]
async fn http_get_extensions_method_user_agent_status_class_header_and_body() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let port = server(move |mut s, req| {
        s2.lock().unwrap().push(req);
        async move {
            let _ = s
                .write_all(
                    b"HTTP/1.1 204 No Content\r\nContent-Type: application/json; charset=utf-8\r\n\
                      X-Ready:   yes\r\n\r\n{\"status\": \"all ok\"}",
                )
                .await;
        }
    })
    .await;
    let check = |ext: &str, url: &str| {
        planned(
            &format!(
                "HTTP_GET {{\n connect_timeout 1\n {ext}\n url {{\n path /x\n {url}\n }}\n }}"
            ),
            port,
        )
    };
    // HEAD with our own User-Agent, and a status class.
    let c = check(
        "method HEAD\n user_agent \"probe/1.0 (lb)\"",
        "status_code 2xx",
    );
    assert!(probe(&c, 0).await.is_ok());
    assert_eq!(
        String::from_utf8(seen.lock().unwrap()[0].clone()).unwrap(),
        format!("HEAD /x HTTP/1.0\r\nUser-Agent: probe/1.0 (lb)\r\nHost: 127.0.0.1:{port}\r\n\r\n")
    );
    let o = probe(&check("", "status_code 3xx"), 0).await;
    assert!(failed_with(&o, "status code error to (204)"), "{o:?}");
    // A header: its name without regard to case, its value holding text.
    assert!(probe(
        &check("", "status_code 204\n expect_header content-type json"),
        0
    )
    .await
    .is_ok());
    assert!(
        probe(&check("", "status_code 204\n expect_header X-Ready yes"), 0)
            .await
            .is_ok()
    );
    let o = probe(
        &check("", "status_code 204\n expect_header Content-Type xml"),
        0,
    )
    .await;
    assert!(failed_with(&o, "without 'xml'"), "{o:?}");
    let o = probe(&check("", "status_code 204\n expect_header X-Missing"), 0).await;
    assert!(failed_with(&o, "no x-missing header"), "{o:?}");
    // The body holds a text, or not.
    assert!(
        probe(&check("", "status_code 2xx\n expect_body \"all ok\""), 0)
            .await
            .is_ok()
    );
    let o = probe(&check("", "status_code 2xx\n expect_body down"), 0).await;
    assert!(failed_with(&o, "body without 'down'"), "{o:?}");
}

/// A CA, and a server certificate for `names` it issued.
fn ca_and_leaf(
    names: &[&str],
) -> (
    String,
    Vec<rustls::pki_types::CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap()
            .signed_by(&leaf_key, &ca)
            .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    (ca.pem(), vec![leaf.der().clone()], key)
}

#[tokio::test]
async fn ssl_get_verifies_the_chain_and_the_name_against_ca_file() {
    let dir = tmpdir("ca-file");
    let (ca_pem, chain, key) = ca_and_leaf(&["backend.test"]);
    let (other_ca, _, _) = ca_and_leaf(&["backend.test"]);
    std::fs::write(dir.join("ca.pem"), ca_pem).unwrap();
    std::fs::write(dir.join("other.pem"), other_ca).unwrap();
    let port = tls_server_with(chain, key, Arc::new(Mutex::new(Vec::new()))).await;
    let ssl = |ext: String| {
        planned(
            &format!("SSL_GET {{\n connect_timeout 2\n {ext}\n url {{\n path /\n }}\n }}"),
            port,
        )
    };
    let ca = dir.join("ca.pem").display().to_string();
    let other = dir.join("other.pem").display().to_string();
    // The chain leads to the CA: up, though the name (an address here) is
    // not the certificate's.
    assert!(probe(&ssl(format!("ca_file {ca}")), 0).await.is_ok());
    // Another CA: the handshake fails.
    let o = probe(&ssl(format!("ca_file {other}")), 0).await;
    assert!(failed_with(&o, "SSL handshake failed"), "{o:?}");
    // The name, when asked: the right one passes, another fails.
    assert!(probe(
        &ssl(format!("ca_file {ca}\n verify_hostname backend.test")),
        0
    )
    .await
    .is_ok());
    let o = probe(
        &ssl(format!("ca_file {ca}\n verify_hostname other.test")),
        0,
    )
    .await;
    assert!(failed_with(&o, "SSL handshake failed"), "{o:?}");
    // verify_hostname alone takes the virtualhost.
    assert!(probe(
        &ssl(format!(
            "ca_file {ca}\n verify_hostname\n virtualhost backend.test"
        )),
        0
    )
    .await
    .is_ok());
    // keepalived's SSL_GET (no ca_file) still accepts it, and a
    // self-signed server fails against the CA.
    assert!(probe(&ssl(String::new()), 0).await.is_ok());
    let self_signed = tls_server(Arc::new(Mutex::new(Vec::new()))).await;
    let o = probe(
        &planned(
            &format!("SSL_GET {{\n connect_timeout 2\n ca_file {ca}\n url {{\n path /\n }}\n }}"),
            self_signed,
        ),
        0,
    )
    .await;
    assert!(failed_with(&o, "SSL handshake failed"), "{o:?}");
    let _ = std::fs::remove_dir_all(dir);
}
