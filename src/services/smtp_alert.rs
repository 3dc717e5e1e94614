//! E-mail alerts (`core/smtp.c`): a mail to every `notification_email`
//! through `smtp_server`, its subject "[router_id] WHAT - STATE" as
//! keepalived words it; the checker and VRRP say what and why.
//!
//! Each alert is its own task, so a slow mail server never holds up a
//! check or an advert.

use crate::config::model::Config;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why an alert was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum SmtpError {
    /// `connect()` failed.
    #[error("connection failed: {0}")]
    Connect(std::io::Error),
    /// No connection, or no read or write, within `smtp_connect_timeout`.
    #[error("timeout {0}")]
    Timeout(&'static str),
    /// A read or write failed.
    #[error("{0} error: {1}")]
    Io(&'static str, std::io::Error),
    /// The server answered, but not as required.
    #[error("{0}")]
    Protocol(String),
}

/// `fut` within `limit`.
async fn within<T>(
    limit: Duration,
    what: &'static str,
    fut: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, SmtpError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(SmtpError::Io(what, e)),
        Err(_) => Err(SmtpError::Timeout(what)),
    }
}

/// keepalived's default HELO name for alerts is the host name; the port 25.
const DEFAULT_PORT: u16 = 25;

/// Where and how alerts are sent.
#[derive(Debug, Clone)]
pub struct Alerter {
    server: SocketAddr,
    helo: String,
    from: String,
    to: Vec<String>,
    router_id: String,
    timeout: Duration,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// Subject line.
    pub subject: String,
    /// Body.
    pub body: String,
}

impl Alerter {
    /// From `global_defs`; `None` without `smtp_server` or recipients, as
    /// keepalived sends nothing then.
    pub fn new(cfg: &Config) -> Option<Alerter> {
        let g = &cfg.global_defs;
        let (host, port) = g.smtp_server.clone()?;
        if g.notification_email.is_empty() {
            return None;
        }
        let ip = host.parse().ok()?;
        let hostname = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into());
        Some(Alerter {
            server: SocketAddr::new(ip, if port == 0 { DEFAULT_PORT } else { port }),
            helo: g.smtp_helo_name.clone().unwrap_or_else(|| hostname.clone()),
            from: g
                .notification_email_from
                .clone()
                .unwrap_or_else(|| format!("keepalived@{hostname}")),
            to: g.notification_email.clone(),
            router_id: g.router_id.clone().unwrap_or(hostname),
            timeout: Duration::from_micros(g.smtp_connect_timeout.max(1)),
        })
    }

    /// The alert about `what` (a real server, a virtual server, a VRRP
    /// instance or group) now in `state`.
    pub fn alert(&self, what: &str, state: &str, body: impl Into<String>) -> Alert {
        Alert {
            subject: format!("[{}] {what} - {state}", self.router_id),
            body: body.into(),
        }
    }

    /// Sends `alert` in the background; failures are logged.
    pub fn send(&self, alert: Alert) {
        let me = self.clone();
        tokio::spawn(async move {
            match me.deliver(&alert).await {
                Ok(()) => log::info!("SMTP alert successfully sent."),
                Err(e) => log::warn!("SMTP alert to {} failed: {e}", me.server),
            }
        });
    }

    /// The SMTP dialogue for one alert.
    pub async fn deliver(&self, alert: &Alert) -> Result<(), SmtpError> {
        let mut s = match tokio::time::timeout(self.timeout, TcpStream::connect(self.server)).await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(SmtpError::Connect(e)),
            Err(_) => return Err(SmtpError::Timeout("connect")),
        };
        self.expect(&mut s, "220").await?;
        self.command(&mut s, &format!("HELO {}\r\n", self.helo), "250")
            .await?;
        self.command(&mut s, &format!("MAIL FROM:<{}>\r\n", self.from), "250")
            .await?;
        for to in &self.to {
            self.command(&mut s, &format!("RCPT TO:<{to}>\r\n"), "250")
                .await?;
        }
        self.command(&mut s, "DATA\r\n", "354").await?;
        let date = rfc822_now();
        let to = self
            .to
            .iter()
            .map(|t| format!(" {t}"))
            .collect::<Vec<_>>()
            .join(",\r\n");
        let msg = format!(
            "Date: {date}\r\nFrom: {}\r\nSubject: {}\r\nX-Mailer: Keepalived\r\nTo:{to}\r\n\r\n{}\r\n\r\n.\r\n",
            self.from, alert.subject, alert.body
        );
        self.command(&mut s, &msg, "250").await?;
        self.command(&mut s, "QUIT\r\n", "221").await.ok();
        Ok(())
    }

    async fn command(&self, s: &mut TcpStream, cmd: &str, code: &str) -> Result<(), SmtpError> {
        within(self.timeout, "SMTP write", s.write_all(cmd.as_bytes())).await?;
        self.expect(s, code).await
    }

    async fn expect(&self, s: &mut TcpStream, code: &str) -> Result<(), SmtpError> {
        let mut line = Vec::new();
        let mut b = [0u8; 512];
        // The last line of a reply is "CODE " (multi-line ones use "CODE-").
        loop {
            let n = within(self.timeout, "SMTP read", s.read(&mut b)).await?;
            if n == 0 {
                return Err(SmtpError::Protocol(
                    "SMTP server closed the connection".into(),
                ));
            }
            line.extend_from_slice(&b[..n]);
            let text = String::from_utf8_lossy(&line).to_string();
            let Some(last) = text.lines().rev().find(|l| !l.is_empty()) else {
                continue;
            };
            if !text.ends_with('\n') || last.as_bytes().get(3) == Some(&b'-') {
                continue;
            }
            return if last.starts_with(code) {
                Ok(())
            } else {
                Err(SmtpError::Protocol(format!(
                    "SMTP server answered {last:?}, {code} expected"
                )))
            };
        }
    }
}

/// `strftime("%a, %d %b %Y %H:%M:%S %z")` in UTC.
fn rfc822_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let c = crate::civil::Civil::of(secs);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        c.weekday(),
        c.day,
        c.month(),
        c.year,
        c.hour,
        c.minute,
        c.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use std::sync::{Arc, Mutex};
    use tokio::net::TcpListener;

    #[test]
    fn dates_are_rfc822() {
        let d = rfc822_now();
        assert!(d.ends_with(" +0000"), "{d}");
        assert_eq!(d.split(' ').count(), 6, "{d}");
    }

    #[tokio::test]
    async fn an_alert_goes_through_the_smtp_dialogue() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(String::new()));
        let s2 = seen.clone();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.write_all(b"220-mx.test\r\n220 ready\r\n").await.unwrap();
            let mut b = [0u8; 4096];
            let mut in_data = false;
            loop {
                let n = s.read(&mut b).await.unwrap();
                if n == 0 {
                    return;
                }
                let t = String::from_utf8_lossy(&b[..n]).to_string();
                s2.lock().unwrap().push_str(&t);
                let reply: &[u8] = if in_data {
                    in_data = false;
                    b"250 queued\r\n"
                } else if t.starts_with("DATA") {
                    in_data = true;
                    b"354 go\r\n"
                } else if t.starts_with("QUIT") {
                    b"221 bye\r\n"
                } else {
                    b"250 ok\r\n"
                };
                s.write_all(reply).await.unwrap();
            }
        });
        let text = format!(
            "global_defs {{\n router_id LVS1\n notification_email {{\n a@x.test\n b@x.test\n }}\n \
             notification_email_from lb@x.test\n smtp_server 127.0.0.1 {port}\n smtp_helo_name lb.x.test\n}}\n\
             virtual_server 10.0.0.1 80 {{\n lb_algo rr\n lb_kind NAT\n protocol TCP\n \
             real_server 127.0.0.1 8080 {{\n smtp_alert\n }}\n}}\n"
        );
        let cfg = load_str(&text).config;
        let a = Alerter::new(&cfg).expect("alerter");
        let alert = a.alert(
            "Realserver [127.0.0.1]:tcp:8080 of virtual server [10.0.0.1]:tcp:80",
            "DOWN",
            "=> CHECK failed on service <=",
        );
        a.deliver(&alert).await.unwrap();
        let got = seen.lock().unwrap().clone();
        assert!(got.starts_with(
            "HELO lb.x.test\r\nMAIL FROM:<lb@x.test>\r\nRCPT TO:<a@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\nDate: "
        ), "{got}");
        assert!(got.contains(
            "\r\nFrom: lb@x.test\r\nSubject: [LVS1] Realserver [127.0.0.1]:tcp:8080 of virtual server [10.0.0.1]:tcp:80 - DOWN\r\nX-Mailer: Keepalived\r\nTo: a@x.test,\r\n b@x.test\r\n\r\n=> CHECK failed on service <=\r\n\r\n.\r\n"
        ), "{got}");
        assert!(got.ends_with("QUIT\r\n"), "{got}");
    }
}
