//! No check waits for another: 1,000 HTTP_GET checks against backends that
//! accept and never answer run beside one healthy backend, whose checks
//! keep their rhythm and whose failure is detected on time. Real sockets,
//! real engine, real clock.

use keepalived::check::engine::{
    plan, Change, Engine, Jitter, NetProber, Outcome, PlanOptions, Planned, Prober,
};
use keepalived::config::load_str;
use keepalived::services::scripts::Scripts;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const HUNG: usize = 1000;

/// Delegates to the real prober and records when the healthy check ran.
struct Recording {
    inner: NetProber,
    watched: String,
    runs: Mutex<Vec<Instant>>,
}

impl Prober for Recording {
    fn probe<'a>(
        &'a self,
        check: &'a Planned,
        url: usize,
        seq: u16,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        if check.name.to_string() == *self.watched {
            self.runs.lock().unwrap().push(Instant::now());
        }
        self.inner.probe(check, url, seq)
    }
}

// One thread, as the daemon runs.
#[tokio::test]
async fn a_thousand_hung_backends_do_not_delay_a_healthy_one() {
    // Backends that accept and then hold the connection without a byte.
    let mut held = Vec::new();
    let mut listeners = Vec::new();
    let mut conf = String::from(
        "virtual_server 10.0.0.1 80 {\n lb_algo rr\n lb_kind NAT\n protocol TCP\n delay_loop 1\n",
    );
    for i in 0..HUNG {
        let ip = format!("127.0.{}.{}", 10 + i / 250, 1 + i % 250);
        let l = TcpListener::bind(format!("{ip}:18080")).await.unwrap();
        listeners.push(l);
        conf.push_str(&format!(
            " real_server {ip} 18080 {{\n HTTP_GET {{\n connect_timeout 5\n warmup 0\n url {{\n path /\n }}\n }}\n }}\n"
        ));
    }
    let healthy = TcpListener::bind("127.0.9.1:0").await.unwrap();
    let hport = healthy.local_addr().unwrap().port();
    conf.push_str(&format!(
        " real_server 127.0.9.1 {hport} {{\n HTTP_GET {{\n connect_timeout 5\n retry 1\n delay_before_retry 1\n warmup 0\n url {{\n path /\n }}\n }}\n }}\n}}\n"
    ));
    let (held_tx, mut held_rx) = mpsc::unbounded_channel();
    for l in listeners {
        let tx = held_tx.clone();
        tokio::spawn(async move {
            loop {
                let (s, _) = l.accept().await.unwrap();
                let _ = tx.send(s);
            }
        });
    }
    tokio::spawn(async move {
        while let Some(s) = held_rx.recv().await {
            held.push(s);
        }
    });
    let server = tokio::spawn(async move {
        loop {
            let (mut s, _) = healthy.accept().await.unwrap();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut b = [0u8; 1024];
                let _ = s.read(&mut b).await;
                let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nok").await;
            });
        }
    });

    let l = load_str(&conf);
    let (p, errors) = plan(&l.config, &PlanOptions::default());
    assert!(errors.is_empty());
    assert_eq!(p.checks.len(), HUNG + 1);
    let watched = format!("[127.0.9.1]:tcp:{hport}");
    let prober = Arc::new(Recording {
        inner: NetProber::new(Scripts::new(4)),
        watched: watched.clone(),
        runs: Mutex::new(Vec::new()),
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let engine = Engine::start(&p, prober.clone(), tx, Jitter::seeded());
    let healthy_idx = p
        .checks
        .iter()
        .position(|c| c.name.to_string() == *watched)
        .unwrap();

    // Six seconds with every hung check waiting on its read.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let runs = prober.runs.lock().unwrap().clone();
    assert!(
        runs.len() >= 4,
        "the healthy check ran {} time(s) in 6 s at delay_loop 1",
        runs.len()
    );
    let gaps: Vec<f64> = runs
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    assert!(
        gaps.iter().all(|&g| g < 1.9),
        "gaps between healthy checks: {gaps:?}"
    );

    // The healthy backend dies: down after one retry, about 2 s.
    server.abort();
    let stopped = Instant::now();
    let down = loop {
        let ev = tokio::time::timeout(Duration::from_secs(15), rx.recv())
            .await
            .expect("the healthy server's failure was never reported")
            .unwrap();
        if ev.check == healthy_idx && ev.change == Change::Down {
            break stopped.elapsed();
        }
    };
    assert!(down < Duration::from_secs(5), "detected after {down:?}");
    println!(
        "healthy check: {} runs in 6 s beside {HUNG} hung backends, max gap {:.2} s; failure detected after {:.2} s",
        runs.len(),
        gaps.iter().cloned().fold(0.0, f64::max),
        down.as_secs_f64()
    );
    engine.stop().await;
}
