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
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn head(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}");
    let _ = writeln!(o, "# TYPE {name} {kind}");
}

/// The metrics text.
pub fn render(v: &View) -> String {
    let mut o = String::new();
    let c = v.counters;
    let p = "keepalived_rs";

    head(
        &mut o,
        &format!("{p}_real_server_up"),
        "gauge",
        "1 when every checker of the real server is up.",
    );
    let mut weights = String::new();
    let mut kernel = String::new();
    let mut seeds = String::new();
    let mut vs_seeds = String::new();
    for (vi, vs) in v.cfg.virtual_servers.iter().enumerate() {
        let Some(h) = v.health.vs.get(vi) else {
            continue;
        };
        let vn = esc(&format_vs(vs));
        let in_kernel = kernel_weights(v.cfg, vi, v.kernel);
        let mut words = Vec::with_capacity(vs.real_servers.len());
        for (ri, rs) in vs.real_servers.iter().enumerate() {
            let Some(r) = h.rs.get(ri) else { continue };
            let labels = format!("vs=\"{vn}\",rs=\"{}\"", esc(&format_rs(rs, vs)));
            let word = seed_state(
                rs_state(r.alive, &checker_words(v, vi, ri)),
                in_kernel.get(ri).copied().flatten(),
            );
            words.push(word);
            let _ = writeln!(
                seeds,
                "{p}_real_server_health{{{labels},status=\"{word}\"}} 1"
            );
            let _ = writeln!(o, "{p}_real_server_up{{{labels}}} {}", u8::from(r.alive));
            let _ = writeln!(
                weights,
                "{p}_real_server_weight{{{labels}}} {}",
                real_weight(r.effective_weight)
            );
            if let Some(w) = in_kernel.get(ri).copied().flatten() {
                let _ = writeln!(kernel, "{p}_real_server_kernel_weight{{{labels}}} {w}");
            }
        }
        let _ = writeln!(
            vs_seeds,
            "{p}_virtual_server_health{{vs=\"{vn}\",status=\"{}\"}} 1",
            seed_vs_state(&words)
        );
    }
    // The sections are joined once, into room made for all of them: a
    // string grown by doubling would hold up to twice the text (megabytes
    // at tens of thousands of real servers).
    o.reserve(weights.len() + kernel.len() + seeds.len() + vs_seeds.len() + 4096);
    head(
        &mut o,
        &format!("{p}_real_server_weight"),
        "gauge",
        "The real server's effective weight (configured plus dynamic).",
    );
    o.push_str(&weights);
    drop(weights);
    head(
        &mut o,
        &format!("{p}_real_server_kernel_weight"),
        "gauge",
        "The real server's weight in the IPVS table (absent when not in it).",
    );
    o.push_str(&kernel);
    drop(kernel);
    head(
        &mut o,
        &format!("{p}_real_server_health"),
        "gauge",
        "1 for the real server's health status in cloud load balancers' words: not enabled (no checker), initialising, healthy, unhealthy, unused (weight 0).",
    );
    o.push_str(&seeds);
    drop(seeds);
    head(
        &mut o,
        &format!("{p}_virtual_server_health"),
        "gauge",
        "1 for the virtual server's health status: no target (no real server), initialising, healthy (one real server is), unhealthy.",
    );
    o.push_str(&vs_seeds);
    drop(vs_seeds);

    head(
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
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
        &mut o,
        &format!("{p}_loop_heartbeat_timestamp_seconds"),
        "gauge",
        "Last time the event loop went round; a value that stops moving is a stalled daemon.",
    );
    let _ = writeln!(o, "{p}_loop_heartbeat_timestamp_seconds {}", c.heartbeat);
    head(
        &mut o,
        &format!("{p}_checks"),
        "gauge",
        "Distinct checks running.",
    );
    let _ = writeln!(o, "{p}_checks {}", v.plan.checks.len());
    o
}
