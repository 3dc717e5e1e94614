//! HTTP_GET and SSL_GET: one `url` fetched per run, judged as keepalived
//! 2.2.7 judges it (`check_http.c`, `lib/html.c`).
//!
//! The request is keepalived's byte for byte; the response is read until the
//! server closes, with `connect_timeout` per read. The verdict rests on the
//! raw bytes as keepalived reads them: headers must end within the first
//! 4095 bytes, the status is the three characters between the first two spaces,
//! `Content-Length:` (case-sensitive) bounds the MD5 input. A general HTTP
//! client (hyper) normalises exactly these bytes away, so this reader is
//! our own (see `docs/compat.md`).

use super::conn::{within, ConnOpts, Failure};
use super::tls::Tls;
use crate::config::model::{HttpCheck, Url};
use md5::{Digest, Md5};
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// keepalived's `MAX_BUFFER_LENGTH`: the headers must fit in one buffer
/// less its terminating NUL.
pub const HEADER_LIMIT: usize = 4095;

/// What the regex part of a url needs at run time. Two are equal when
/// their patterns and options are.
#[derive(Debug, Clone)]
pub struct UrlRegex {
    /// Compiled pattern.
    pub re: regex::bytes::Regex,
    /// `regex_no_match`.
    pub no_match: bool,
    /// `regex_min_offset`.
    pub min_offset: usize,
    /// `regex_max_offset` (0 = none).
    pub max_offset: usize,
}

impl PartialEq for UrlRegex {
    fn eq(&self, o: &Self) -> bool {
        self.re.as_str() == o.re.as_str()
            && (self.no_match, self.min_offset, self.max_offset)
                == (o.no_match, o.min_offset, o.max_offset)
    }
}

impl Eq for UrlRegex {}

impl std::hash::Hash for UrlRegex {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.re.as_str().hash(h);
        (self.no_match, self.min_offset, self.max_offset).hash(h);
    }
}

/// One url, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UrlSpec {
    /// `path`.
    pub path: String,
    /// The Host header's value when a `virtualhost` names it; none: the
    /// address connected to, `ip:port` (written at each request, so that
    /// the real servers of one checker's settings share one url).
    pub host: Option<Box<str>>,
    /// `digest`, as 16 bytes.
    pub digest: Option<[u8; 16]>,
    /// `status_code` ranges (default 200-299).
    pub status: Vec<(u16, u16)>,
    /// `regex`.
    pub regex: Option<UrlRegex>,
    /// The request up to its Host header's value, made once
    /// ([`request_head`]).
    pub request_head: Box<[u8]>,
    /// The extensions' expectations, if any (boxed: a url of keepalived's
    /// has none, and an HTTP check's record stays small).
    pub expect: Option<Box<Expect>>,
}

/// What a url expects beyond keepalived's verdicts (extensions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Expect {
    /// `expect_body`: text the body must hold.
    pub body: Option<Box<[u8]>>,
    /// `expect_header`: a header the response must have (name in lower
    /// case), with text its value must hold.
    pub header: Option<(String, Option<String>)>,
}

/// keepalived's request (`request_template`; extensions `method` and
/// `user_agent` change its first two lines) up to the Host header's value
/// (`Host: ` its last bytes).
pub fn request_head(method: &str, user_agent: &str, path: &str, protocol: &str) -> Box<[u8]> {
    let minor = if protocol == "1.1" { 1 } else { 0 };
    let close = if matches!(protocol, "1.1" | "1.0C" | "1.0c") {
        "Connection: close\r\n"
    } else {
        ""
    };
    format!("{method} {path} HTTP/1.{minor}\r\nUser-Agent: {user_agent}\r\n{close}Host: ")
        .into_bytes()
        .into_boxed_slice()
}

/// A request head with its Host header's value and the end of the head.
fn with_host(head: &[u8], host: &str) -> Vec<u8> {
    let mut r = Vec::with_capacity(head.len() + host.len() + 4);
    r.extend_from_slice(head);
    r.extend_from_slice(host.as_bytes());
    r.extend_from_slice(b"\r\n\r\n");
    r
}

/// The value of header `name` (lower case) in a response head, if there.
fn header_value<'h>(head: &'h [u8], name: &str) -> Option<&'h [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (n, v) = (&line[..colon], &line[colon + 1..]);
        n.eq_ignore_ascii_case(name.as_bytes())
            .then(|| v.trim_ascii())
    })
}

/// `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// The Host header's value when a `virtualhost` names it: the first of
/// url → checker → real server → virtual server.
fn named_host(vhosts: [Option<&str>; 4]) -> Option<&str> {
    vhosts.into_iter().flatten().next()
}

/// The Host header's value without a `virtualhost`: the address connected
/// to, `ip:port` (IPv6 bracketed).
fn address_host(conn: &ConnOpts) -> String {
    match conn.dst {
        std::net::SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
        std::net::SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

/// C's `atoi()`: leading white space, an optional sign, digits; 0 if none.
fn atoi(b: &[u8]) -> i64 {
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut v: i64 = 0;
    while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(i64::from(d - b'0'));
        i += 1;
    }
    if neg {
        -v
    } else {
        v
    }
}

/// `extract_status_code()` as 2.2.7 has it: the word after the first space
/// (before any CR) must be exactly three characters followed by a space,
/// read by `strtoul()`; anything else is 0, which no `status_code` allows.
/// So `HTTP/1.0 200\r\n` (no reason phrase, no space) fails, as the guest
/// scenario `check-http-raw` shows keepalived does.
pub fn status_code(head: &[u8]) -> i64 {
    let mut i = 0;
    while i < head.len() && head[i] != b' ' && head[i] != b'\r' {
        i += 1;
    }
    if head.get(i) != Some(&b' ') {
        return 0;
    }
    i += 1;
    if i + 3 >= head.len() || head[i] == b' ' || head[i + 3] != b' ' {
        return 0;
    }
    let w = &head[i..i + 3];
    // strtoul() must consume all three: digits, or a '+' and two digits.
    let digits = match w[0] {
        b'+' => &w[1..],
        _ => w,
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    digits
        .iter()
        .fold(0i64, |v, d| v * 10 + i64::from(d - b'0'))
}

/// `extract_content_length()`: `strstr()` for the case-sensitive header in
/// the first buffer (up to a NUL byte), then `atoi()`. `None` for absent or
/// -1, which keepalived cannot tell apart.
pub fn content_length(first: &[u8]) -> Option<u64> {
    const TAG: &[u8] = b"Content-Length:";
    let text = first.split(|&c| c == 0).next().unwrap_or(&[]);
    let at = text.windows(TAG.len()).position(|w| w == TAG)?;
    match atoi(&text[at + TAG.len()..]) {
        -1 => None,
        // A negative length wraps to a huge size_t: no limit in practice.
        v if v < 0 => Some(u64::MAX - 1),
        v => Some(v as u64),
    }
}

/// The response as it is read, chunk by chunk.
#[derive(Debug)]
pub struct Response {
    head: Vec<u8>,
    header_end: Option<usize>,
    status: i64,
    content_len: Option<u64>,
    rx_bytes: u64,
    md5: Option<Md5>,
    keep_body: bool,
    body: Vec<u8>,
}

/// How much body a regex is matched against.
const REGEX_BODY_LIMIT: usize = 1 << 20;

impl Response {
    /// A new reader; `digest` and `regex` say what the body is needed for.
    pub fn new(digest: bool, regex: bool) -> Response {
        Response {
            head: Vec::new(),
            header_end: None,
            status: 0,
            content_len: None,
            rx_bytes: 0,
            md5: digest.then(Md5::new),
            keep_body: regex,
            body: Vec::new(),
        }
    }

    /// The header buffer is full without an end of headers: keepalived
    /// reads no further and judges "no data received".
    pub fn head_full(&self) -> bool {
        self.header_end.is_none() && self.head.len() >= HEADER_LIMIT
    }

    /// Feeds received bytes. Returns how many were taken (less than given
    /// only when the header buffer filled up).
    pub fn feed(&mut self, data: &[u8]) -> usize {
        if self.header_end.is_some() {
            self.body_bytes(data);
            return data.len();
        }
        let room = HEADER_LIMIT - self.head.len();
        let take = room.min(data.len());
        self.head.extend_from_slice(&data[..take]);
        if let Some(p) = self.head.windows(4).position(|w| w == b"\r\n\r\n") {
            let end = p + 4;
            self.header_end = Some(end);
            self.status = status_code(&self.head[..end]);
            self.content_len = content_length(&self.head);
            let first_body = self.head.split_off(end);
            self.body_bytes(&first_body);
            let rest = &data[take..];
            self.body_bytes(rest);
            return data.len();
        }
        take
    }

    fn body_bytes(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        if let Some(m) = self.md5.as_mut() {
            let limit = self.content_len.unwrap_or(u64::MAX);
            if limit > self.rx_bytes {
                let n = (limit - self.rx_bytes).min(b.len() as u64) as usize;
                m.update(&b[..n]);
            }
        }
        if self.keep_body && self.body.len() < REGEX_BODY_LIMIT {
            let n = (REGEX_BODY_LIMIT - self.body.len()).min(b.len());
            self.body.extend_from_slice(&b[..n]);
        }
        self.rx_bytes += b.len() as u64;
    }

    /// Headers were received.
    pub fn extracted(&self) -> bool {
        self.header_end.is_some()
    }

    /// The header bytes and the kept body bytes that went into the digest.
    pub fn raw_parts(&self) -> (&[u8], &[u8]) {
        let n = self
            .content_len
            .map_or(self.body.len(), |l| self.body.len().min(l as usize));
        (&self.head, &self.body[..n])
    }

    /// The MD5 of the body (bounded by Content-Length).
    pub fn digest(mut self) -> Option<[u8; 16]> {
        self.take_digest()
    }

    /// The MD5 of the body, the rest of the response kept (the verdict
    /// reads its body and headers after the digest).
    fn take_digest(&mut self) -> Option<[u8; 16]> {
        self.md5.take().map(|m| m.finalize().into())
    }

    /// `http_handle_response()`'s verdict, in its order.
    pub fn judge(mut self, url: &UrlSpec) -> Result<(), Failure> {
        if !self.extracted() {
            return Err(Failure::Protocol("Read, no data received from".into()));
        }
        let code = self.status;
        if !url.status.iter().any(|&(a, b)| {
            (100..=599).contains(&code) && i64::from(a) <= code && code <= i64::from(b)
        }) {
            return Err(Failure::Protocol(format!(
                "HTTP status code error to ({code})"
            )));
        }
        if let Some(cl) = self.content_len {
            if cl != self.rx_bytes && cl != u64::MAX - 1 {
                log::info!(
                    "http_check url {}: content_length ({cl}) does not match received bytes ({})",
                    url.path,
                    self.rx_bytes
                );
            }
        }
        let matched = url.regex.as_ref().map(|r| {
            let start = r.min_offset.min(self.body.len());
            match r.re.find_at(&self.body, start) {
                Some(m) => r.max_offset == 0 || m.start() < r.max_offset,
                None => false,
            }
        });
        if let Some(want) = url.digest {
            if self.take_digest() != Some(want) {
                return Err(Failure::Protocol("MD5 digest error to".into()));
            }
        }
        if let (Some(r), Some(m)) = (&url.regex, matched) {
            if m == r.no_match {
                return Err(Failure::Protocol("Regex match failed".into()));
            }
        }
        let expect = url.expect.as_deref();
        if let Some((name, text)) = expect.and_then(|e| e.header.as_ref()) {
            match header_value(&self.head, name) {
                None => return Err(Failure::Protocol(format!("no {name} header in the answer"))),
                Some(v) => {
                    if let Some(t) = text.as_deref().filter(|t| !holds(v, t.as_bytes())) {
                        return Err(Failure::Protocol(format!(
                            "header {name} is '{}', without '{t}'",
                            String::from_utf8_lossy(v)
                        )));
                    }
                }
            }
        }
        if let Some(want) = expect.and_then(|e| e.body.as_ref()) {
            if !holds(&self.body, want) {
                return Err(Failure::Protocol(format!(
                    "body without '{}'",
                    String::from_utf8_lossy(want)
                )));
            }
        }
        Ok(())
    }
}

/// A whole HTTP_GET or SSL_GET check (connect, handshake, request, the
/// response to its end) must end within this many `connect_timeout`s
/// (keepalived only bounds each step).
pub const HTTP_DEADLINE_FACTOR: u32 = 10;

/// Writes the request and reads the whole response.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    req: &[u8],
    timeout: Duration,
    mut resp: Response,
    tls: bool,
) -> Result<Response, Failure> {
    within(timeout, "WEB write", stream.write_all(req)).await?;
    loop {
        if resp.head_full() {
            return Ok(resp);
        }
        let n = match tokio::time::timeout(timeout, read_into(stream, &mut resp)).await {
            Err(_) => return Err(Failure::Timeout("HTTP read")),
            Ok(Ok(n)) => n,
            // A TLS peer that closes without close_notify has still sent
            // its answer; keepalived's SSL_read path takes it as the end.
            Ok(Err(e)) if tls && e.kind() == io::ErrorKind::UnexpectedEof => 0,
            Ok(Err(e)) => return Err(Failure::Io("Read", e)),
        };
        if n == 0 {
            return Ok(resp);
        }
    }
}

thread_local! {
    /// The read buffer of every HTTP exchange on this thread: a read fills
    /// it and feeds the response within one poll, so no probe keeps one
    /// across its waits (4 KB in each probe in flight, and at tens of
    /// thousands of real servers a backlog holds hundreds of them).
    static READ_BUF: std::cell::RefCell<[u8; 4096]> = const { std::cell::RefCell::new([0; 4096]) };
}

/// Reads once from `stream` into the thread's buffer and feeds `resp`;
/// the bytes read (0 at the end).
async fn read_into<S: AsyncRead + Unpin>(stream: &mut S, resp: &mut Response) -> io::Result<usize> {
    std::future::poll_fn(|cx| {
        READ_BUF.with_borrow_mut(|buf| {
            let mut rb = tokio::io::ReadBuf::new(buf);
            std::pin::Pin::new(&mut *stream)
                .poll_read(cx, &mut rb)
                .map_ok(|()| {
                    resp.feed(rb.filled());
                    rb.filled().len()
                })
        })
    })
    .await
}

/// An HTTP_GET or SSL_GET checker, resolved: where it connects, and what
/// it asks and expects there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpProbe {
    /// Where to connect.
    pub conn: ConnOpts,
    /// The rest, shared by the real servers checked alike (a planner
    /// interns it: tens of thousands of real servers mostly have one
    /// checker's settings).
    pub spec: Arc<HttpSpec>,
}

/// What an HTTP check asks and expects, apart from where it connects.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HttpSpec {
    /// The urls, in order.
    pub urls: Box<[UrlSpec]>,
    /// TLS for SSL_GET.
    pub tls: Option<Tls>,
    /// The SNI name when `enable_sni` is set.
    pub sni: Option<String>,
    /// The name the certificate must be for (extension `verify_hostname`;
    /// [`Tls`] checks it when made with `check_name`); `Some(None)`: the
    /// address connected to.
    pub verify_name: Option<Option<String>>,
}

/// Why a url could not be used.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// `digest` is not 32 hex digits.
    #[error("url {0}: digest is not an MD5 in hex")]
    Digest(String),
    /// `regex` does not compile here.
    #[error("url {path}: regex: {source}")]
    Regex {
        /// The url.
        path: String,
        /// Why.
        source: regex::Error,
    },
}

fn parse_digest(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl HttpSpec {
    /// From the model. `vhosts` are the real server's and the virtual
    /// server's `virtualhost`.
    pub fn new(
        h: &HttpCheck,
        rs_vhost: Option<&str>,
        vs_vhost: Option<&str>,
        tls: Option<Tls>,
    ) -> Result<HttpSpec, UrlError> {
        let mut urls = Vec::with_capacity(h.urls.len());
        for u in &h.urls {
            urls.push(Self::url(h, u, rs_vhost, vs_vhost)?);
        }
        // SNI: the first url's vhost → checker vhost → VS vhost (the real
        // server's is skipped, as in `ssl_connect()`).
        let sni = h.enable_sni.then(|| {
            h.urls
                .first()
                .and_then(|u| u.virtualhost.as_deref().map(String::from))
                .or_else(|| h.virtualhost.as_deref().map(String::from))
                .or_else(|| vs_vhost.map(String::from))
        });
        // verify_hostname without a name: the virtualhost the checker asks
        // for, else the address (its certificate must name it).
        let verify_name = h.ext().verify_hostname.as_ref().map(|n| {
            n.clone()
                .or_else(|| {
                    h.urls
                        .first()
                        .and_then(|u| u.virtualhost.as_deref().map(String::from))
                })
                .or_else(|| h.virtualhost.as_deref().map(String::from))
                .or_else(|| rs_vhost.map(String::from))
                .or_else(|| vs_vhost.map(String::from))
        });
        Ok(HttpSpec {
            urls: urls.into_boxed_slice(),
            tls,
            sni: sni.flatten(),
            verify_name,
        })
    }

    fn url(
        h: &HttpCheck,
        u: &Url,
        rs_vhost: Option<&str>,
        vs_vhost: Option<&str>,
    ) -> Result<UrlSpec, UrlError> {
        let path = u.path.as_deref().unwrap_or_default().to_string();
        let digest = match &u.digest {
            Some(d) => Some(parse_digest(d).ok_or_else(|| UrlError::Digest(path.clone()))?),
            None => None,
        };
        let regex = match &u.re.regex {
            Some(r) => {
                let mut b = regex::bytes::RegexBuilder::new(r);
                for o in &u.re.regex_options {
                    match o.as_str() {
                        "caseless" => b.case_insensitive(true),
                        "multiline" => b.multi_line(true),
                        "dotall" => b.dot_matches_new_line(true),
                        "extended" => b.ignore_whitespace(true),
                        "ungreedy" => b.swap_greed(true),
                        _ => &mut b,
                    };
                }
                Some(UrlRegex {
                    re: b.build().map_err(|source| UrlError::Regex {
                        path: path.clone(),
                        source,
                    })?,
                    no_match: u.re.regex_no_match,
                    min_offset: u.re.regex_min_offset.unwrap_or(0) as usize,
                    max_offset: u.re.regex_max_offset.unwrap_or(0) as usize,
                })
            }
            None => None,
        };
        let host = named_host([
            u.virtualhost.as_deref(),
            h.virtualhost.as_deref(),
            rs_vhost,
            vs_vhost,
        ])
        .map(Box::from);
        Ok(UrlSpec {
            request_head: request_head(
                h.ext().method.as_deref().unwrap_or("GET"),
                h.ext().user_agent.as_deref().unwrap_or("KeepAliveClient"),
                &path,
                h.http_protocol.as_str(),
            ),
            expect: u.ext.as_ref().map(|x| {
                Box::new(Expect {
                    body: x.expect_body.as_ref().map(|b| b.as_bytes().into()),
                    header: x
                        .expect_header
                        .as_ref()
                        .map(|(n, t)| (n.to_ascii_lowercase(), t.clone())),
                })
            }),
            host,
            path,
            digest,
            status: if u.status_code.is_empty() {
                vec![(200, 299)]
            } else {
                u.status_code.clone()
            },
            regex,
        })
    }
}

impl HttpProbe {
    /// The request for `url`, with its Host header.
    pub fn request(&self, url: &UrlSpec) -> Vec<u8> {
        match &url.host {
            Some(h) => with_host(&url.request_head, h),
            None => with_host(&url.request_head, &address_host(&self.conn)),
        }
    }

    /// Fetches url `i` and judges the answer.
    pub async fn check(&self, i: usize) -> Result<(), Failure> {
        let url = &self.spec.urls[i];
        let resp = self.fetch(url).await?;
        resp.judge(url)
    }

    /// Fetches a url and returns the response reader.
    pub async fn fetch(&self, url: &UrlSpec) -> Result<Response, Failure> {
        self.fetch_into(
            url,
            Response::new(
                url.digest.is_some(),
                url.regex.is_some() || url.expect.as_ref().is_some_and(|e| e.body.is_some()),
            ),
        )
        .await
    }

    /// Fetches a url keeping the body and its digest (genhash).
    pub async fn fetch_digest(&self, url: &UrlSpec) -> Result<Response, Failure> {
        self.fetch_into(url, Response::new(true, true)).await
    }

    async fn fetch_into(&self, url: &UrlSpec, resp: Response) -> Result<Response, Failure> {
        // keepalived's timer is per read, so a server that keeps sending (an
        // endless body, a byte a second) holds its check forever; the whole
        // check has a deadline too.
        let deadline = self.conn.timeout().saturating_mul(HTTP_DEADLINE_FACTOR);
        match tokio::time::timeout(deadline, self.exchange_once(url, resp)).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout("HTTP check deadline")),
        }
    }

    async fn exchange_once(&self, url: &UrlSpec, resp: Response) -> Result<Response, Failure> {
        let req = &self.request(url);
        let tcp = self.conn.tcp().await?;
        let spec = &*self.spec;
        match &spec.tls {
            Some(tls) => {
                let address;
                let name = match &spec.verify_name {
                    Some(Some(n)) => Some(n.as_str()),
                    Some(None) => {
                        address = self.conn.dst.ip().to_string();
                        Some(address.as_str())
                    }
                    None => spec.sni.as_deref(),
                };
                let mut s = tls.connect(tcp, name, &self.conn).await?;
                exchange(&mut s, req, self.conn.timeout(), resp, true).await
            }
            None => {
                let mut s = tcp;
                let r = exchange(&mut s, req, self.conn.timeout(), resp, false).await;
                // The server has closed (or failed): end with a reset, so
                // that neither side keeps a TIME_WAIT socket per check.
                let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(status: Vec<(u16, u16)>, digest: Option<[u8; 16]>) -> UrlSpec {
        UrlSpec {
            path: "/".into(),
            host: Some("h".into()),
            digest,
            status,
            regex: None,
            request_head: request_head("GET", "KeepAliveClient", "/", "1.0"),
            expect: None,
        }
    }

    #[test]
    fn header_and_body_expectations_come_after_keepalived_s_verdicts() {
        let mut u = url(vec![(200, 299)], None);
        u.expect = Some(Box::new(Expect {
            header: Some(("x-ready".into(), Some("yes".into()))),
            body: Some(b"up".as_slice().into()),
        }));
        let judge = |raw: &[u8], u: &UrlSpec| {
            let mut r = Response::new(false, true);
            r.feed(raw);
            r.judge(u).map_err(|e| e.to_string())
        };
        assert!(judge(b"HTTP/1.0 200 OK\r\nx-READY:yes\r\n\r\nall up", &u).is_ok());
        // The status first, then the header, then the body.
        let e = judge(b"HTTP/1.0 500 E\r\n\r\n", &u).unwrap_err();
        assert!(e.contains("status code"), "{e}");
        let e = judge(b"HTTP/1.0 200 OK\r\nX-Ready: no\r\n\r\nup", &u).unwrap_err();
        assert!(e.contains("header x-ready is 'no', without 'yes'"), "{e}");
        let e = judge(b"HTTP/1.0 200 OK\r\nX-Ready: yes\r\n\r\ndown", &u).unwrap_err();
        assert!(e.contains("body without 'up'"), "{e}");
        // A header named in the status line's text is not a header.
        u.expect.as_mut().unwrap().body = None;
        let e = judge(b"HTTP/1.0 200 x-ready: yes\r\n\r\n", &u).unwrap_err();
        assert!(e.contains("no x-ready header"), "{e}");
    }

    /// The whole request: the head, then the host.
    fn request(path: &str, host: &str, protocol: &str) -> Vec<u8> {
        with_host(
            &request_head("GET", "KeepAliveClient", path, protocol),
            host,
        )
    }

    #[test]
    fn request_is_keepalived_s() {
        assert_eq!(
            request("/x", "10.0.0.1:80", "1.0"),
            b"GET /x HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: 10.0.0.1:80\r\n\r\n"
        );
        assert_eq!(
            request("/", "h", "1.1"),
            b"GET / HTTP/1.1\r\nUser-Agent: KeepAliveClient\r\nConnection: close\r\nHost: h\r\n\r\n"
        );
        assert!(String::from_utf8(request("/", "h", "1.0C"))
            .unwrap()
            .starts_with("GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn status_is_three_characters_between_spaces() {
        assert_eq!(status_code(b"HTTP/1.0 200 OK\r\n\r\n"), 200);
        // No space after the code: keepalived 2.2.7 reads no code.
        assert_eq!(status_code(b"HTTP/1.0 200\r\n\r\n"), 0);
        assert_eq!(status_code(b"HTTP/1.0  200 OK\r\n"), 0);
        assert_eq!(status_code(b"garbage\r\n\r\n"), 0);
        assert_eq!(status_code(b"garbage\r\nX: a b\r\n\r\n"), 0);
        assert_eq!(status_code(b"HTTP/1.0 20x OK"), 0);
        assert_eq!(status_code(b"HTTP/1.0 2000 OK"), 0);
        assert_eq!(status_code(b"HTTP/1.0 +20 OK"), 20);
    }

    #[test]
    fn content_length_is_case_sensitive_and_bounds_the_digest() {
        assert_eq!(
            content_length(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n"),
            Some(3)
        );
        assert_eq!(
            content_length(b"HTTP/1.0 200 OK\r\ncontent-length: 3\r\n\r\n"),
            None
        );
        let mut r = Response::new(true, false);
        r.feed(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabcdef");
        let want: [u8; 16] = Md5::digest(b"abc").into();
        assert_eq!(r.digest(), Some(want));
    }

    #[test]
    fn oversized_headers_are_no_data() {
        let mut r = Response::new(false, false);
        let mut head = b"HTTP/1.0 200 OK\r\nX: ".to_vec();
        head.resize(5000, b'a');
        let taken = r.feed(&head);
        assert_eq!(taken, HEADER_LIMIT);
        assert!(r.head_full());
        assert!(matches!(
            r.judge(&url(vec![(200, 299)], None)),
            Err(Failure::Protocol(m)) if m.starts_with("Read, no data")
        ));
    }

    #[test]
    fn verdict_order_status_then_digest() {
        let body = b"hello";
        let d: [u8; 16] = Md5::digest(body).into();
        let feed = |s: &[u8]| {
            let mut r = Response::new(true, false);
            // Split across reads at an awkward place.
            let (a, b) = s.split_at(s.len() / 2);
            r.feed(a);
            r.feed(b);
            r
        };
        let ok = b"HTTP/1.1 200 OK\r\n\r\nhello";
        assert!(feed(ok).judge(&url(vec![(200, 299)], Some(d))).is_ok());
        assert!(feed(ok).judge(&url(vec![(300, 300)], Some(d))).is_err());
        assert!(feed(b"HTTP/1.1 200 OK\r\n\r\nhellO")
            .judge(&url(vec![(200, 299)], Some(d)))
            .is_err());
        assert!(feed(b"HTTP/1.1 600 OK\r\n\r\n")
            .judge(&url(vec![(100, 599)], None))
            .is_err());
    }

    #[test]
    fn regex_with_offsets_and_no_match() {
        let spec = |no_match, min, max| UrlSpec {
            regex: Some(UrlRegex {
                re: regex::bytes::Regex::new("al+ive").unwrap(),
                no_match,
                min_offset: min,
                max_offset: max,
            }),
            ..url(vec![(200, 299)], None)
        };
        let resp = || {
            let mut r = Response::new(false, true);
            r.feed(b"HTTP/1.0 200 OK\r\n\r\n0123alive");
            r
        };
        assert!(resp().judge(&spec(false, 0, 0)).is_ok());
        assert!(resp().judge(&spec(true, 0, 0)).is_err());
        assert!(resp().judge(&spec(false, 5, 0)).is_err());
        assert!(resp().judge(&spec(false, 0, 4)).is_err());
        assert!(resp().judge(&spec(false, 0, 5)).is_ok());
    }
}
