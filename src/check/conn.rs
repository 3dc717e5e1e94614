//! Where a socket checker connects and how: `connect_ip`/`connect_port`,
//! `bindto`/`bind_port`, `bind_if` (SO_BINDTODEVICE), `fwmark` (SO_MARK)
//! and `connect_timeout`, resolved from the config model, and the sockets
//! made from them.
//!
//! I/O shell of the checker side: every probe (TCP, HTTP, SSL, SMTP, UDP,
//! DNS, PING) opens its socket here, so the options mean the same for all,
//! as `core/layer4.c` makes them mean for keepalived.

use crate::config::model::CheckerCommon;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::net::{TcpSocket, TcpStream, UdpSocket};

/// One checker's connection options, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnOpts {
    /// Destination.
    pub dst: SocketAddr,
    /// `connect_timeout`, also the per-read timeout, µs (8 bytes where a
    /// `Duration` takes 16: tens of thousands of checks); read through
    /// [`ConnOpts::timeout`].
    timeout_us: u64,
    /// `half_open` (extension, TCP_CHECK): a SYN instead of a connect.
    pub half_open: bool,
    /// Where the connection leaves from, when any of it is set: boxed, as
    /// it rarely is (a planned check's record is kept small for tens of
    /// thousands; read through [`ConnOpts::bind`] and its neighbours).
    pub source: Option<Box<ConnSource>>,
}

/// The rarely set options of a connection's source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ConnSource {
    /// `bindto` + `bind_port`.
    pub bind: Option<SocketAddr>,
    /// `bind_if`.
    pub bind_if: Option<Box<str>>,
    /// `fwmark`.
    pub fwmark: Option<u32>,
}

impl ConnSource {
    /// Boxed, or none when nothing is set.
    pub fn boxed(self) -> Option<Box<ConnSource>> {
        (self != ConnSource::default()).then(|| Box::new(self))
    }
}

/// A timeout in whole microseconds, at least one (keepalived's timers
/// count in µs).
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

impl ConnOpts {
    /// From a checker's (validated) common options.
    pub fn from_common(c: &CheckerCommon) -> ConnOpts {
        let t = c.resolved();
        let ip = t.connect_ip;
        let bind = match (c.source.bindto, c.source.bind_port) {
            (Some(a), p) => Some(SocketAddr::new(a, p.unwrap_or(0))),
            (None, Some(p)) => Some(SocketAddr::new(
                match ip {
                    IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                    IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
                },
                p,
            )),
            (None, None) => None,
        };
        ConnOpts {
            dst: SocketAddr::new(ip, t.connect_port),
            timeout_us: micros(t.connect_timeout),
            half_open: false,
            source: ConnSource {
                bind,
                bind_if: c.source.bind_if.as_deref().map(Into::into),
                fwmark: c.source.fwmark,
            }
            .boxed(),
        }
    }

    /// `connect_timeout`, also the per-read timeout (at least 1 µs).
    pub fn timeout(&self) -> Duration {
        Duration::from_micros(self.timeout_us)
    }

    /// `bindto` + `bind_port`.
    pub fn bind(&self) -> Option<SocketAddr> {
        self.source.as_ref().and_then(|s| s.bind)
    }

    /// `bind_if`.
    pub fn bind_if(&self) -> Option<&str> {
        self.source.as_ref().and_then(|s| s.bind_if.as_deref())
    }

    /// `fwmark`.
    pub fn fwmark(&self) -> Option<u32> {
        self.source.as_ref().and_then(|s| s.fwmark)
    }

    /// The same, with the source options `f` makes of these.
    pub fn with_source(&self, f: impl FnOnce(&mut ConnSource)) -> ConnOpts {
        let mut src = self.source.as_deref().cloned().unwrap_or_default();
        f(&mut src);
        ConnOpts {
            source: src.boxed(),
            ..self.clone()
        }
    }

    /// Straight to `dst` with `timeout`, no other option (genhash, tests).
    pub fn to(dst: SocketAddr, timeout: Duration) -> ConnOpts {
        ConnOpts {
            dst,
            timeout_us: micros(timeout),
            half_open: false,
            source: None,
        }
    }

    /// A socket of `ty`/`proto` for this destination with the bind, device
    /// and mark options applied.
    pub fn socket(&self, ty: Type, proto: Option<Protocol>) -> io::Result<Socket> {
        let domain = Domain::for_address(self.dst);
        let s = Socket::new(domain, ty.nonblocking().cloexec(), proto)?;
        if let Some(dev) = self.bind_if() {
            s.bind_device(Some(dev.as_bytes()))?;
        }
        if let Some(mark) = self.fwmark() {
            s.set_mark(mark)?;
        }
        if let Some(b) = self.bind() {
            if b.port() != 0 {
                s.set_reuse_address(true)?;
            }
            s.bind(&SockAddr::from(b))?;
        }
        Ok(s)
    }

    /// A TCP connection within `connect_timeout`.
    pub async fn tcp(&self) -> Result<TcpStream, Failure> {
        let s = self
            .socket(Type::STREAM, Some(Protocol::TCP))
            .map_err(Failure::Socket)?;
        let sock = TcpSocket::from_std_stream(s.into());
        match tokio::time::timeout(self.timeout(), sock.connect(self.dst)).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(e)) => Err(Failure::Connect(e)),
            Err(_) => Err(Failure::ConnectTimeout),
        }
    }

    /// A connected UDP socket.
    pub fn udp(&self) -> Result<UdpSocket, Failure> {
        let s = self
            .socket(Type::DGRAM, Some(Protocol::UDP))
            .map_err(Failure::Socket)?;
        s.connect(&SockAddr::from(self.dst))
            .map_err(Failure::Connect)?;
        UdpSocket::from_std(s.into()).map_err(Failure::Socket)
    }
}

/// A probe launched without a task of its own ([`super::halfopen`],
/// [`super::connects`]), ended: told to the engine's scheduler as the
/// check, its result, when it started and ended.
pub type Done = (
    usize,
    Result<(), Failure>,
    tokio::time::Instant,
    tokio::time::Instant,
);

/// Why a probe failed, in words close to keepalived's log lines.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The socket could not be made or bound: keepalived reschedules without
    /// a verdict ("no state change").
    #[error("cannot create socket: {0}")]
    Socket(io::Error),
    /// `connect()` failed.
    #[error("connection failed: {0}")]
    Connect(io::Error),
    /// No connection within `connect_timeout`.
    #[error("connection timed out")]
    ConnectTimeout,
    /// A read or write did not complete within `connect_timeout`.
    #[error("timeout {0}")]
    Timeout(&'static str),
    /// A read or write failed.
    #[error("{0} error: {1}")]
    Io(&'static str, io::Error),
    /// The peer answered, but not as required.
    #[error("{0}")]
    Protocol(String),
}

impl Failure {
    /// A short word for the kind of failure (metrics label, status).
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Socket(_) => "socket",
            Failure::Connect(e) if e.kind() == io::ErrorKind::ConnectionRefused => "refused",
            Failure::Connect(_) => "connect_error",
            Failure::ConnectTimeout => "connect_timeout",
            Failure::Timeout(_) => "timeout",
            Failure::Io(..) => "io_error",
            Failure::Protocol(_) => "bad_response",
        }
    }

    /// keepalived does not count socket creation errors as failures.
    pub fn is_local(&self) -> bool {
        matches!(self, Failure::Socket(_))
    }
}

/// Runs `f` within `d`, mapping an expiry to [`Failure::Timeout`].
pub async fn within<T>(
    d: Duration,
    what: &'static str,
    f: impl std::future::Future<Output = io::Result<T>>,
) -> Result<T, Failure> {
    match tokio::time::timeout(d, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Failure::Io(what, e)),
        Err(_) => Err(Failure::Timeout(what)),
    }
}
