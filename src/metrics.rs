//! Prometheus metrics (text exposition format 0.0.4), served when
//! `metrics_listen` is configured (an extension of ours).
//!
//! Beside the pipeline, read-only, like [`crate::status`]: rendered from
//! the same [`View`] on each scrape, so the checks themselves only keep
//! counters in their board entry (a histogram bucket and an error count per
//! run) and pay nothing for the text.

use crate::check::engine::{format_rs, LATENCY_BUCKETS};
use crate::config::validate::format_vs;
use crate::health::real_weight;
use crate::lvs::desired::kernel_weights;
use crate::status::{checker_words, rs_state, seed_state, seed_vs_state, View};
use std::collections::BTreeMap;
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn head(o: &mut impl Write, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// Counts what is written: the text's length, before it is written.
#[derive(Default)]
struct Length(usize);

impl Write for Length {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The metrics text, followed by `more` (the VRRP instances').
///
/// Written twice: once to count it, then into a string of exactly that
/// length. Grown by doubling from side strings per section, a scrape at
/// 20,000 real servers left 4.6 MB in the process after it (the text is
/// 375 bytes a real server; the allocator keeps what it was handed back).
pub fn render_with(v: &View, more: &str) -> String {
    let mut n = Length::default();
    render_into(v, &mut n);
    let mut o = String::with_capacity(n.0 + more.len());
    render_into(v, &mut o);
    o.push_str(more);
    o
}

/// The metrics text.
pub fn render(v: &View) -> String {
    render_with(v, "")
}

/// One line per real server of one family, each VS's real servers in
/// order; `line` writes a real server's, given its labels.
fn per_rs(
    v: &View,
    o: &mut impl Write,
    mut line: impl FnMut(&mut dyn Write, &str, usize, usize, &crate::health::RsHealth, &[Option<u32>]),
) {
    let mut labels = String::new();
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        let Some(h) = v.health.vs.get(vi) else {
            continue;
        };
        let vn = esc(&format_vs(vs));
        let in_kernel = kernel_weights(v.cfg, vi, v.kernel);
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let Some(r) = h.rs.get(ri) else { continue };
            labels.clear();
            let _ = write!(labels, "vs=\"{vn}\",rs=\"{}\"", esc(&format_rs(rs, vs)));
            line(o, &labels, vi, ri, r, &in_kernel);
        }
    }
}

/// A real server's health status word (seed_state's).
fn rs_word(
    v: &View,
    vi: usize,
    ri: usize,
    r: &crate::health::RsHealth,
    in_kernel: &[Option<u32>],
) -> &'static str {
    seed_state(
        rs_state(r.alive, &checker_words(v, vi, ri)),
        in_kernel.get(ri).copied().flatten(),
    )
}

fn render_into(v: &View, o: &mut impl Write) {
    let c = v.counters;
    let p = "keepalived_rs";

    head(
        o,
        &format!("{p}_real_server_up"),
        "gauge",
        "1 when every checker of the real server is up.",
    );
    per_rs(v, o, |o, labels, _, _, r, _| {
        let _ = writeln!(o, "{p}_real_server_up{{{labels}}} {}", u8::from(r.alive));
    });
    head(
        o,
        &format!("{p}_real_server_weight"),
        "gauge",
        "The real server's effective weight (configured plus dynamic).",
    );
    per_rs(v, o, |o, labels, _, _, r, _| {
        let _ = writeln!(
            o,
            "{p}_real_server_weight{{{labels}}} {}",
            real_weight(r.effective_weight)
        );
    });
    head(
        o,
        &format!("{p}_real_server_kernel_weight"),
        "gauge",
        "The real server's weight in the IPVS table (absent when not in it).",
    );
    per_rs(v, o, |o, labels, _, ri, _, in_kernel| {
        if let Some(w) = in_kernel.get(ri).copied().flatten() {
            let _ = writeln!(o, "{p}_real_server_kernel_weight{{{labels}}} {w}");
        }
    });
    head(
        o,
        &format!("{p}_real_server_health"),
        "gauge",
        "1 for the real server's health status in cloud load balancers' words: not enabled (no checker), initialising, healthy, unhealthy, unused (weight 0).",
    );
    per_rs(v, o, |o, labels, vi, ri, r, in_kernel| {
        let word = rs_word(v, vi, ri, r, in_kernel);
        let _ = writeln!(o, "{p}_real_server_health{{{labels},status=\"{word}\"}} 1");
    });
    head(
        o,
        &format!("{p}_virtual_server_health"),
        "gauge",
        "1 for the virtual server's health status: no target (no real server), initialising, healthy (one real server is), unhealthy.",
    );
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        let Some(h) = v.health.vs.get(vi) else {
            continue;
        };
        let in_kernel = kernel_weights(v.cfg, vi, v.kernel);
        let words: Vec<&str> = (0..vs.real_servers.len())
            .filter_map(|ri| h.rs.get(ri).map(|r| rs_word(v, vi, ri, r, &in_kernel)))
            .collect();
        let _ = writeln!(
            o,
            "{p}_virtual_server_health{{vs=\"{}\",status=\"{}\"}} 1",
            esc(&format_vs(vs)),
            seed_vs_state(&words)
        );
    }

    head(
        o,
        &format!("{p}_virtual_server_quorum_up"),
        "gauge",
        "1 when the virtual server has quorum.",
    );
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        if let Some(h) = v.health.vs.get(vi) {
            let _ = writeln!(
                o,
                "{p}_virtual_server_quorum_up{{vs=\"{}\"}} {}",
                esc(&format_vs(vs)),
                u8::from(h.quorum_up)
            );
        }
    }

    head(
        o,
        &format!("{p}_virtual_server_fail_open"),
        "gauge",
        "1 while every real server has failed and fail_open keeps them all in.",
    );
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        if let Some(h) = v.health.vs.get(vi) {
            let _ = writeln!(
                o,
                "{p}_virtual_server_fail_open{{vs=\"{}\"}} {}",
                esc(&format_vs(vs)),
                u8::from(crate::lvs::desired::fail_open(vs, h))
            );
        }
    }

    head(
        o,
        &format!("{p}_real_server_transitions_total"),
        "counter",
        "Real servers coming up or going down.",
    );
    let _ = writeln!(
        o,
        "{p}_real_server_transitions_total{{direction=\"up\"}} {}",
        c.rs_up
    );
    let _ = writeln!(
        o,
        "{p}_real_server_transitions_total{{direction=\"down\"}} {}",
        c.rs_down
    );

    // Per checker type: the histogram and the errors, summed over checks.
    let mut hist: BTreeMap<&str, ([u64; LATENCY_BUCKETS.len() + 1], f64)> = BTreeMap::new();
    let mut errors: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for (t, totals) in v.board.totals() {
        let e = hist
            .entry(t)
            .or_insert(([0; LATENCY_BUCKETS.len() + 1], 0.0));
        for (a, b) in e.0.iter_mut().zip(totals.latency_counts.iter()) {
            *a += b;
        }
        e.1 += totals.latency_sum;
        for (kind, n) in &totals.errors {
            *errors.entry((t, kind)).or_insert(0) += n;
        }
    }
    head(
        o,
        &format!("{p}_check_duration_seconds"),
        "histogram",
        "How long probes took, by checker type.",
    );
    for (t, (counts, sum)) in &hist {
        let mut cum = 0;
        for (i, b) in LATENCY_BUCKETS.iter().enumerate() {
            cum += counts[i];
            let _ = writeln!(
                o,
                "{p}_check_duration_seconds_bucket{{type=\"{t}\",le=\"{b}\"}} {cum}"
            );
        }
        cum += counts[LATENCY_BUCKETS.len()];
        let _ = writeln!(
            o,
            "{p}_check_duration_seconds_bucket{{type=\"{t}\",le=\"+Inf\"}} {cum}"
        );
        let _ = writeln!(o, "{p}_check_duration_seconds_sum{{type=\"{t}\"}} {sum}");
        let _ = writeln!(o, "{p}_check_duration_seconds_count{{type=\"{t}\"}} {cum}");
    }
    head(
        o,
        &format!("{p}_check_errors_total"),
        "counter",
        "Failed probes, by checker type and reason.",
    );
    for ((t, r), n) in &errors {
        let _ = writeln!(
            o,
            "{p}_check_errors_total{{type=\"{t}\",reason=\"{r}\"}} {n}"
        );
    }

    head(
        o,
        &format!("{p}_ipvs_operations_total"),
        "counter",
        "IPVS operations sent, by result.",
    );
    let _ = writeln!(
        o,
        "{p}_ipvs_operations_total{{result=\"ok\"}} {}",
        c.ipvs_ok
    );
    let _ = writeln!(
        o,
        "{p}_ipvs_operations_total{{result=\"error\"}} {}",
        c.ipvs_errors
    );

    head(
        o,
        &format!("{p}_reloads_total"),
        "counter",
        "Reloads, by result.",
    );
    let _ = writeln!(o, "{p}_reloads_total{{result=\"applied\"}} {}", c.reloads);
    let _ = writeln!(
        o,
        "{p}_reloads_total{{result=\"refused\"}} {}",
        c.reloads_refused
    );
    head(
        o,
        &format!("{p}_reload_duration_seconds_total"),
        "counter",
        "Time spent in reloads.",
    );
    let _ = writeln!(
        o,
        "{p}_reload_duration_seconds_total {}",
        c.reload_seconds_total
    );
    head(
        o,
        &format!("{p}_last_reload_duration_seconds"),
        "gauge",
        "How long the last reload took.",
    );
    let _ = writeln!(
        o,
        "{p}_last_reload_duration_seconds {}",
        c.last_reload_seconds
    );
    head(
        o,
        &format!("{p}_loop_heartbeat_timestamp_seconds"),
        "gauge",
        "Last time the event loop went round; a value that stops moving is a stalled daemon.",
    );
    let _ = writeln!(o, "{p}_loop_heartbeat_timestamp_seconds {}", c.heartbeat);
    head(
        o,
        &format!("{p}_checks"),
        "gauge",
        "Distinct checks running.",
    );
    let _ = writeln!(o, "{p}_checks {}", v.plan.checks.len());
}
