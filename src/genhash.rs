//! `genhash` (and `keepalived -T`): fetches a url the way HTTP_GET/SSL_GET
//! do and prints the MD5 digest of the body, for the `digest` keyword.
//!
//! A front end on the checker's own HTTP reader ([`crate::check::http`]),
//! so the digest it prints is the one the checker computes. Command line,
//! messages and exit codes as keepalived 2.2.7's `genhash`: messages go to
//! standard output and failures of the fetch still exit 0.

use crate::check::conn::{ConnOpts, Failure};
use crate::check::http::{request_head, HttpProbe, HttpSpec, Response, UrlSpec};
use crate::check::tls::Tls;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The usage text, as genhash prints it.
pub fn usage(prog: &str) -> String {
    format!(
        r#"Usage: {prog} COMMAND [OPTIONS]
Commands:
   -s server-address -p port -u url
   -S -s server-address -p port -u url
   -h

Options:
Either long or short options are allowed.
   --use-ssl         -S       Use SSL connection to remote server.
   --use-sni         -I       Use SNI during SSL handshake (uses virtualhost setting; see -V).
   --server          -s       Use the specified remote server address.
   --port            -p       Use the specified remote server port.
   --url             -u       Use the specified remote server url.
   --use-virtualhost -V       Use the specified virtualhost in GET query.
   --verbose         -v       Use verbose mode output.
   --help            -h       Display this short inlined help screen.
   --fwmark          -m       Use the specified FW mark.
   --protocol        -P       Use the specified HTTP protocol - '1.0', 1.0c', '1.1'.
                                1.0c means 1.0 with 'Connection: close'
   --timeout         -t       Timeout in seconds
"#
    )
}

/// Parsed options.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Args {
    /// `-S`.
    pub ssl: bool,
    /// `-I`.
    pub sni: bool,
    /// `-s`.
    pub server: Option<String>,
    /// `-p`.
    pub port: Option<u16>,
    /// `-u`.
    pub url: Option<String>,
    /// `-V`.
    pub vhost: Option<String>,
    /// `-v`.
    pub verbose: bool,
    /// `-h`.
    pub help: bool,
    /// `-m`.
    pub fwmark: Option<u32>,
    /// `-P`.
    pub protocol: Option<String>,
    /// `-t` seconds.
    pub timeout: Option<u64>,
}

/// Parses getopt-style arguments (`-s X`, `-sX`, `--server X`,
/// `--server=X`).
pub fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (name, inline): (String, Option<String>) = if let Some(l) = arg.strip_prefix("--") {
            match l.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (l.to_string(), None),
            }
        } else if let Some(s) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut ch = s.chars();
            let c = ch.next().map(String::from).unwrap_or_default();
            let rest: String = ch.collect();
            (c, (!rest.is_empty()).then_some(rest))
        } else {
            return Err(format!("unexpected argument {arg}"));
        };
        let long = match name.as_str() {
            "S" | "use-ssl" => "use-ssl",
            "I" | "use-sni" => "use-sni",
            "s" | "server" => "server",
            "p" | "port" => "port",
            "u" | "url" => "url",
            "V" | "use-virtualhost" => "use-virtualhost",
            "v" | "verbose" => "verbose",
            "h" | "help" => "help",
            "m" | "fwmark" => "fwmark",
            "P" | "protocol" => "protocol",
            "t" | "timeout" => "timeout",
            // keepalived -T passes its own option through.
            "T" | "genhash" => continue,
            _ => return Err(format!("unrecognized option '{arg}'")),
        };
        let takes_value = !matches!(long, "use-ssl" | "use-sni" | "verbose" | "help");
        let value = if takes_value {
            match inline {
                Some(v) => Some(v),
                None if i < args.len() => {
                    i += 1;
                    Some(args[i - 1].clone())
                }
                None => return Err(format!("option '{arg}' requires an argument")),
            }
        } else {
            None
        };
        let v = value.unwrap_or_default();
        match long {
            "use-ssl" => a.ssl = true,
            "use-sni" => a.sni = true,
            "server" => a.server = Some(v),
            "port" => a.port = Some(v.parse().map_err(|_bad| format!("invalid port {v}"))?),
            "url" => a.url = Some(v),
            "use-virtualhost" => a.vhost = Some(v),
            "verbose" => a.verbose = true,
            "help" => a.help = true,
            "fwmark" => a.fwmark = Some(v.parse().map_err(|_bad| format!("invalid fwmark {v}"))?),
            "protocol" => {
                if !matches!(v.as_str(), "1.0" | "1.0c" | "1.0C" | "1.1") {
                    return Err(format!("invalid protocol {v}"));
                }
                a.protocol = Some(v)
            }
            "timeout" => {
                a.timeout = Some(v.parse().map_err(|_bad| format!("invalid timeout {v}"))?)
            }
            _ => {}
        }
    }
    Ok(a)
}

fn hexdump(out: &mut String, b: &[u8]) {
    for (n, chunk) in b.chunks(16).enumerate() {
        let _ = write!(out, "{:04}  ", n * 16);
        for i in 0..16 {
            match chunk.get(i) {
                Some(x) => {
                    let _ = write!(out, "{x:02x} ");
                }
                None => out.push_str("   "),
            }
            if i == 7 {
                out.push_str("- ");
            }
        }
        out.push_str("  ");
        for i in 0..16 {
            out.push(match chunk.get(i) {
                Some(&x) if (0x20..0x7f).contains(&x) => x as char,
                Some(_) => '.',
                None => ' ',
            });
        }
        out.push('\n');
    }
}

fn banner(title: &str) -> String {
    format!("-----------------------[{title}]-----------------------\n")
}

/// Runs genhash with `args` (without the program name).
pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{prog}: {e}");
            eprint!("{}", usage(prog));
            return ExitCode::from(1);
        }
    };
    if a.help {
        eprint!("{}", usage(prog));
        return ExitCode::from(1);
    }
    let (Some(server), Some(port), Some(url)) = (a.server.clone(), a.port, a.url.clone()) else {
        eprint!("{}", usage(prog));
        return ExitCode::from(1);
    };
    let Ok(ip) = server.parse::<IpAddr>() else {
        eprintln!("{prog}: invalid server address {server}");
        return ExitCode::from(1);
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{prog}: cannot start the event loop: {e}");
            return ExitCode::from(1);
        }
    };
    let (out, err) = rt.block_on(fetch(&a, SocketAddr::new(ip, port), &url));
    print!("{out}");
    eprint!("{err}");
    ExitCode::SUCCESS
}

/// Fetches and formats the result: (standard output, standard error).
pub async fn fetch(a: &Args, dst: SocketAddr, path: &str) -> (String, String) {
    let conn = ConnOpts::to(dst, Duration::from_secs(a.timeout.unwrap_or(5).max(1)))
        .with_source(|s| s.fwmark = a.fwmark);
    let tls = if a.ssl {
        match Tls::new(None) {
            Ok(t) => Some(t),
            Err(e) => return (String::new(), format!("{e}\n")),
        }
    } else {
        None
    };
    let protocol = a.protocol.clone().unwrap_or_else(|| "1.0".into());
    let url = UrlSpec {
        request_head: request_head("GET", "KeepAliveClient", path, &protocol),
        path: path.to_string(),
        host: a.vhost.as_deref().map(Box::from),
        digest: None,
        status: vec![(100, 599)],
        regex: None,
        expect: None,
    };
    let probe = HttpProbe {
        conn,
        spec: Arc::new(HttpSpec {
            urls: Box::new([url.clone()]),
            tls,
            sni: if a.sni { a.vhost.clone() } else { None },
            verify_name: None,
        }),
    };
    let started = std::time::Instant::now();
    let resp: Result<Response, Failure> = probe.fetch_digest(&url).await;
    match resp {
        Err(Failure::Connect(_) | Failure::ConnectTimeout | Failure::Socket(_)) => {
            ("Connection failed\n".into(), String::new())
        }
        Err(Failure::Timeout(w)) if w.contains("SSL") => {
            ("Timeout connecting\n".into(), String::new())
        }
        Err(Failure::Protocol(m)) if m.starts_with("SSL") => (
            "SSL handshake/communication error connecting to\n".into(),
            String::new(),
        ),
        Err(Failure::Timeout(_)) => ("Timeout WEB read\n".into(), String::new()),
        Err(e) => (format!("Read error with server: {e}\n"), String::new()),
        Ok(r) if !r.extracted() => (
            String::new(),
            "no data received from remote webserver\n".into(),
        ),
        Ok(r) => {
            let mut out = String::new();
            if a.verbose {
                let (head, body) = r.raw_parts();
                out.push_str(&banner("    HTTP Header Buffer    "));
                hexdump(&mut out, head);
                out.push_str(&banner(" HTTP Header Ascii Buffer "));
                out.push_str(&String::from_utf8_lossy(head));
                out.push('\n');
                out.push_str(&banner("        HTML Buffer        "));
                hexdump(&mut out, body);
                out.push('\n');
            }
            let d = r.digest().unwrap_or_default();
            let hex: String = d.iter().map(|x| format!("{x:02x}")).collect();
            if a.verbose {
                out.push_str(&banner("    HTML hash resulting    "));
                hexdump(&mut out, &d);
                out.push_str(&banner(" HTML hash final resulting "));
            }
            out.push_str(&hex);
            out.push('\n');
            if a.verbose {
                let _ = write!(
                    out,
                    "\nGlobal response time for [{path}] = {} usecs\n",
                    started.elapsed().as_micros()
                );
            }
            (out, String::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_short_long_and_inline() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let a = parse(&v("-s 127.0.0.1 -p80 --url=/x -V h -P 1.1 -t 2 -S -I -v")).unwrap();
        assert_eq!(a.server.as_deref(), Some("127.0.0.1"));
        assert_eq!(a.port, Some(80));
        assert_eq!(a.url.as_deref(), Some("/x"));
        assert_eq!(a.vhost.as_deref(), Some("h"));
        assert_eq!(a.protocol.as_deref(), Some("1.1"));
        assert_eq!(a.timeout, Some(2));
        assert!(a.ssl && a.sni && a.verbose);
        assert!(parse(&v("-x")).is_err());
        assert!(parse(&v("-P 2.0")).is_err());
    }
}
