//! The daemon's control surfaces: the status socket (`keepalived --status`,
//! `--plan`) and the Prometheus listener (`metrics_listen`).
//!
//! I/O shell beside the event loop: connections are read here, and each
//! request goes to the loop as a [`Request`], which answers from its own
//! state ([`crate::status`], [`crate::metrics`], a reload preview). A slow
//! or hostile client holds only its own task, cut after [`CLIENT_TIMEOUT`]
//! to send its request and [`CLIENT_TIMEOUT`] to take its answer; at most
//! [`MAX_CLIENTS`] are served at once per listener (a new client takes
//! the place of the longest idle one, and is closed at once only when all
//! are being answered), and an `accept` that fails (EMFILE) is retried after
//! [`ACCEPT_BACKOFF`], never in a loop.
//!
//! The socket is made mode 0600 (root only, as the daemon runs as root),
//! and a peer whose uid is neither root nor ours is refused even if the
//! mode was widened by hand.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// Clients served at once by one listener.
pub const MAX_CLIENTS: usize = 16;

/// The wait after a failed `accept` (out of descriptors, say) before the
/// next one.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(200);

/// A listener's accept, for [`accept_loop`].
trait Accept {
    type Stream: Send + 'static;
    fn accept_one(&self) -> impl std::future::Future<Output = io::Result<Self::Stream>> + Send;
}

impl Accept for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept_one(&self) -> io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

impl Accept for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept_one(&self) -> io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

/// The clients a listener serves: each waiting for its request (idle)
/// or being answered.
#[derive(Default)]
struct Slots {
    next: u64,
    clients: Vec<Client>,
}

/// One client a listener serves.
struct Client {
    id: u64,
    since: tokio::time::Instant,
    /// Still waiting for its request.
    idle: bool,
    task: Option<tokio::task::AbortHandle>,
}

fn lock_slots(s: &std::sync::Mutex<Slots>) -> std::sync::MutexGuard<'_, Slots> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// A client's place in its listener's [`Slots`], freed when dropped.
pub struct Ticket {
    slots: Arc<std::sync::Mutex<Slots>>,
    id: u64,
}

impl Ticket {
    fn with<R>(&self, f: impl FnOnce(&mut Slots) -> R) -> R {
        f(&mut lock_slots(&self.slots))
    }

    /// Its request is in: from now on it is being answered, and no new
    /// client takes its place.
    pub fn answering(&self) {
        self.with(|s| {
            if let Some(c) = s.clients.iter_mut().find(|c| c.id == self.id) {
                c.idle = false;
            }
        });
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let id = self.id;
        self.with(|s| s.clients.retain(|c| c.id != id));
    }
}

/// Accepts on `listener` forever, serving each client with `serve` under
/// the listener's cap. A client over the cap takes the place of the one
/// that has waited longest without sending its request (idle clients
/// cannot lock the others out); only when every place is being answered
/// is it closed at once.
async fn accept_loop<L, F, Fut>(what: &'static str, listener: L, serve: F)
where
    L: Accept,
    F: Fn(L::Stream, Ticket) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(std::sync::Mutex::new(Slots::default()));
    let mut last_warning: Option<tokio::time::Instant> = None;
    loop {
        let stream = match listener.accept_one().await {
            Ok(s) => s,
            Err(e) => {
                // Logged once a minute at most: the condition lasts.
                let now = tokio::time::Instant::now();
                if last_warning.is_none_or(|t| now - t > Duration::from_secs(60)) {
                    log::warn!("{what}: accept: {e}; retrying");
                    last_warning = Some(now);
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let id = {
            let mut s = lock_slots(&slots);
            if s.clients.len() >= MAX_CLIENTS {
                let idle = s
                    .clients
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.idle)
                    .min_by_key(|(_, c)| c.since)
                    .map(|(k, _)| k);
                match idle {
                    Some(k) => {
                        if let Some(t) = s.clients.remove(k).task {
                            t.abort();
                        }
                    }
                    None => {
                        // Every place is being answered: closed at once.
                        drop(s);
                        drop(stream);
                        continue;
                    }
                }
            }
            s.next += 1;
            let id = s.next;
            s.clients.push(Client {
                id,
                since: tokio::time::Instant::now(),
                idle: true,
                task: None,
            });
            id
        };
        let ticket = Ticket {
            slots: slots.clone(),
            id,
        };
        let fut = serve(stream, ticket);
        let task = tokio::spawn(fut);
        let mut s = lock_slots(&slots);
        if let Some(c) = s.clients.iter_mut().find(|c| c.id == id) {
            c.task = Some(task.abort_handle());
        }
    }
}

/// The status socket unless configured otherwise.
pub const DEFAULT_STATUS_SOCKET: &str = "/run/keepalived/status.sock";

/// How long a client may take to send its request.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The status document (JSON).
    Status,
    /// The metrics text.
    Metrics,
    /// The IPVS changes a reload of this file would make.
    Plan(PathBuf),
    /// A membership edit (`disable`, `enable`, `weight`, `add`, `remove`
    /// and their arguments), made and answered with the IPVS operations it
    /// caused.
    Member(String),
}

/// The verbs of [`Query::Member`].
pub const MEMBER_VERBS: [&str; 5] = ["disable", "enable", "weight", "add", "remove"];

/// A query and where its answer goes.
#[derive(Debug)]
pub struct Request {
    /// The question.
    pub query: Query,
    /// The answer.
    pub reply: oneshot::Sender<String>,
}

/// The status socket for `configured` (the `status_socket` keyword) and
/// `cli` (`--status-socket`).
pub fn socket_path(
    cli: Option<&str>,
    configured: Option<&str>,
    namespace: Option<&str>,
) -> PathBuf {
    match (cli.or(configured), namespace) {
        (Some(p), _) => PathBuf::from(p),
        // One daemon per namespace: each its own, beside its pid files.
        (None, Some(ns)) => PathBuf::from(format!("/run/keepalived/{ns}/status.sock")),
        (None, None) => PathBuf::from(DEFAULT_STATUS_SOCKET),
    }
}

/// Parses a status-socket request line: `status` or `plan PATH`.
pub fn parse_request(line: &str) -> Result<Query, String> {
    let line = line.trim();
    match line.split_once(' ') {
        None if line == "status" || line.is_empty() => Ok(Query::Status),
        None if line == "metrics" => Ok(Query::Metrics),
        Some(("plan", p)) if p.trim().starts_with('/') => Ok(Query::Plan(PathBuf::from(p.trim()))),
        Some(("plan", _)) => Err("plan needs an absolute path".into()),
        Some((verb, _)) if MEMBER_VERBS.contains(&verb) => Ok(Query::Member(line.to_string())),
        _ => Err(format!(
            "unknown request {line:?}; ask `status`, `plan PATH` or one of {}",
            MEMBER_VERBS.join(", ")
        )),
    }
}

async fn ask(tx: &mpsc::UnboundedSender<Request>, query: Query) -> Option<String> {
    let (reply, rx) = oneshot::channel();
    tx.send(Request { query, reply }).ok()?;
    rx.await.ok()
}

/// A bound status socket; the file is removed when dropped.
pub struct StatusSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for StatusSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// Binds the status socket at `path` (mode 0600) and serves it.
pub fn serve_status(path: &Path, tx: mpsc::UnboundedSender<Request>) -> io::Result<StatusSocket> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A socket left by a daemon killed with -9 is removed; one a live
    // daemon answers on (a dry run beside production) is not taken over,
    // and anything else is not ours to remove.
    if is_socket(path) {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another daemon answers on it (use --status-socket)",
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let me = nix::unistd::geteuid().as_raw();
    let task = tokio::spawn(async move {
        accept_loop(
            "status socket",
            listener,
            move |stream: tokio::net::UnixStream, ticket: Ticket| {
                let tx = tx.clone();
                async move {
                    let allowed = stream
                        .peer_cred()
                        .is_ok_and(|c| c.uid() == 0 || c.uid() == me);
                    let (r, mut w) = stream.into_split();
                    if !allowed {
                        let _ = tokio::time::timeout(
                            CLIENT_TIMEOUT,
                            w.write_all(b"error: permission denied\n"),
                        )
                        .await;
                        return;
                    }
                    let mut line = String::new();
                    let mut r = BufReader::new(r.take(4096));
                    let read = tokio::time::timeout(CLIENT_TIMEOUT, r.read_line(&mut line)).await;
                    ticket.answering();
                    let answer = match read {
                        Ok(Ok(_)) => match parse_request(&line) {
                            Ok(q) => ask(&tx, q)
                                .await
                                .unwrap_or_else(|| "error: the daemon is stopping\n".into()),
                            Err(e) => format!("error: {e}\n"),
                        },
                        _ => return,
                    };
                    // A client that does not read its answer is cut too.
                    let _ =
                        tokio::time::timeout(CLIENT_TIMEOUT, w.write_all(answer.as_bytes())).await;
                }
            },
        )
        .await;
    });
    Ok(StatusSocket {
        path: path.to_path_buf(),
        task,
    })
}

/// Serves `GET /metrics` on `addr`.
pub async fn serve_metrics(
    addr: std::net::SocketAddr,
    tx: mpsc::UnboundedSender<Request>,
) -> io::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    Ok(tokio::spawn(async move {
        accept_loop("metrics", listener, move |mut stream: tokio::net::TcpStream, ticket: Ticket| {
            let tx = tx.clone();
            async move {
                let mut buf = Vec::with_capacity(1024);
                let head = tokio::time::timeout(CLIENT_TIMEOUT, async {
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
                        let n = stream.read(&mut chunk).await?;
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    Ok::<_, io::Error>(())
                })
                .await;
                if !matches!(head, Ok(Ok(()))) {
                    return;
                }
                ticket.answering();
                let first = buf.split(|&b| b == b'\n').next().unwrap_or_default();
                let first = String::from_utf8_lossy(first);
                let mut parts = first.split_whitespace();
                let (method, target) = (parts.next(), parts.next());
                let (status, ctype, body) = match (method, target) {
                    (Some("GET"), Some("/metrics")) => match ask(&tx, Query::Metrics).await {
                        Some(b) => ("200 OK", "text/plain; version=0.0.4", b),
                        None => ("503 Service Unavailable", "text/plain", "stopping\n".into()),
                    },
                    _ => ("404 Not Found", "text/plain", "try /metrics\n".into()),
                };
                // The head, then the body as it is: no copy of a body of
                // megabytes (some 375 bytes a real server), whose peak would
                // stay in the process's memory after the scrape.
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tokio::time::timeout(CLIENT_TIMEOUT, async {
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(body.as_bytes()).await
                })
                .await;
            }
        })
        .await;
    }))
}

/// Client side: sends `request` to the status socket and returns the
/// answer.
pub fn client(path: &Path, request: &str) -> io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(path)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    s.write_all(request.as_bytes())?;
    s.write_all(b"\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request("status\n"), Ok(Query::Status));
        assert_eq!(parse_request(""), Ok(Query::Status));
        assert_eq!(
            parse_request("plan /etc/keepalived/new.conf\n"),
            Ok(Query::Plan(PathBuf::from("/etc/keepalived/new.conf")))
        );
        assert!(parse_request("plan relative.conf").is_err());
        assert_eq!(
            parse_request("disable [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:8001\n"),
            Ok(Query::Member(
                "disable [192.0.2.1]:tcp:80 [127.0.0.1]:tcp:8001".into()
            ))
        );
        assert!(parse_request("shutdown").is_err());
    }
}
