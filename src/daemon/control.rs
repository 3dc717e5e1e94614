//! The daemon's control, a service below the subsystems: binding the
//! status socket and the metrics port ([`listen`]), and answering them
//! when no checker runs (VRRP, BFD, or both: [`serve`], from the
//! subsystems' published views, so a query never waits on a subsystem's
//! thread). With a checker, the checker answers (its view is the larger
//! one) and reads the same boards.

use crate::cli::Options;
use crate::config::model::Config;
use crate::control::{Query, Request};
use crate::status::{add_boards, board_metrics as metrics, Boards};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The listeners of the daemon's control: the status socket and the
/// metrics port, feeding the queries of whoever answers them (the
/// checker's loop, or [`serve`] when no checker runs). Dropping them closes both (and removes the socket).
pub struct Listeners {
    _status: Option<crate::control::StatusSocket>,
    _metrics: Option<tokio::task::JoinHandle<()>>,
}

/// Binds the status socket and `metrics_listen`, each sending to `tx`. A
/// listener that cannot be bound is logged; the daemon runs without it.
pub async fn listen(cfg: &Config, opts: &Options, tx: mpsc::UnboundedSender<Request>) -> Listeners {
    let sock_path = crate::control::socket_path(
        opts.status_socket.as_deref(),
        cfg.global_defs.status_socket.as_deref(),
        crate::daemon::process::namespace(opts, Some(cfg)).as_deref(),
    );
    let status = match crate::control::serve_status(&sock_path, tx.clone()) {
        Ok(s) => Some(s),
        Err(e) => {
            log::warn!(
                "status socket {}: {e} (keepalived --status will not reach this daemon)",
                sock_path.display()
            );
            None
        }
    };
    let metrics = match cfg.global_defs.metrics_listen {
        Some(addr) => match crate::control::serve_metrics(addr, tx).await {
            Ok(t) => {
                log::info!("metrics: http://{addr}/metrics");
                Some(t)
            }
            Err(e) => {
                log::error!("metrics_listen {addr}: {e}");
                None
            }
        },
        None => None,
    };
    Listeners {
        _status: status,
        _metrics: metrics,
    }
}

/// Binds the status socket and `metrics_listen` of `cfg` and answers them
/// from `boards` on this runtime until the listeners are dropped;
/// `reloads` counts the reloads applied.
pub async fn serve(
    cfg: &Config,
    opts: &Options,
    boards: Boards,
    reloads: Arc<AtomicU64>,
) -> Listeners {
    let (tx, rx) = mpsc::unbounded_channel();
    let listeners = listen(cfg, opts, tx).await;
    let file = super::reload::config_path(opts);
    tokio::spawn(answer(rx, boards, file.display().to_string(), reloads));
    listeners
}

async fn answer(
    mut rx: mpsc::UnboundedReceiver<Request>,
    boards: Boards,
    config_file: String,
    reloads: Arc<AtomicU64>,
) {
    let started = crate::status::unix_now();
    while let Some(req) = rx.recv().await {
        let a = match req.query {
            Query::Status => {
                let daemon = crate::status::daemon_section(&crate::status::Daemon {
                    config_file: &config_file,
                    dry_run: false,
                    started,
                    reloads: reloads.load(Ordering::Relaxed),
                    reloads_refused: 0,
                    checks: 0,
                });
                status(&boards, daemon).to_string() + "\n"
            }
            Query::Metrics => metrics(&boards),
            Query::Plan(_) | Query::Member(_) => {
                "error: no checker runs in this daemon\n".to_string()
            }
        };
        let _ = req.reply.send(a);
    }
}

/// The status document: the daemon, and what each board holds.
fn status(boards: &Boards, daemon: serde_json::Value) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "daemon": daemon,
        "virtual_servers": [],
        "transitions": [],
    });
    add_boards(&mut doc, boards);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_without_a_checker_shows_what_its_boards_hold() {
        let boards = Boards {
            vrrp: None,
            bfd: Some(Default::default()),
        };
        let doc = status(&boards, serde_json::json!({"pid": 1}));
        assert_eq!(doc["bfd"], serde_json::json!([]));
        assert!(doc.get("vrrp").is_none());
        assert_eq!(doc["virtual_servers"], serde_json::json!([]));
    }
}
