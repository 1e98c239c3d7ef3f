//! The run's results: one table for people (req/s, p50, p99, Sovereign's req/s over each row's,
//! how busy the rest of the machine was), the Messages row against the chat row, and one JSON
//! line for scripts.

use serde_json::{Value, json};

use super::{PeersArgs, Row, Which, messages};
use crate::round3;

/// `/v1/messages` against `/v1/chat/completions` on the same all-policies gateway: printed, and
/// returned for the JSON line (null when either row was not measured).
pub(super) fn messages_versus_chat(rows: &[Row]) -> Value {
    let figures = |which| {
        rows.iter()
            .find(|r| r.which == which)
            .and_then(|r| r.outcome.as_ref().ok())
            .map(|m| (m.tally.rps, m.tally.p50_ms))
    };
    let (Some(chat), Some(msgs)) = (
        figures(Which::SovereignAll),
        figures(Which::SovereignMessages),
    ) else {
        return Value::Null;
    };
    let v = messages::versus_chat(chat, msgs);
    println!(
        "Messages vs chat completions, all policies, same gateway: {:.0} vs {:.0} req/s \
         (chat ÷ Messages {:.3}x, goal ≤ {:.2}x: {}), p50 {:+.3} ms",
        msgs.0,
        chat.0,
        v["chat_over_messages"].as_f64().unwrap_or(f64::NAN),
        1.0 + messages::GOAL_OVERHEAD,
        if v["within_goal"] == true {
            "met"
        } else {
            "NOT MET"
        },
        v["p50_ms_added"].as_f64().unwrap_or(f64::NAN),
    );
    v
}

fn rps(rows: &[Row], which: Which) -> Option<f64> {
    rows.iter()
        .find(|r| r.which == which)
        .and_then(|r| r.outcome.as_ref().ok())
        .map(|m| m.tally.rps)
}

/// Sovereign's req/s over this row's.
pub(super) fn ratio(sovereign: Option<f64>, this: f64) -> Option<f64> {
    sovereign.filter(|_| this > 0.0).map(|s| s / this)
}

pub(super) fn table(rows: &[Row], upstream: &str, load: (f64, f64)) {
    let (all, none) = (
        rps(rows, Which::SovereignAll),
        rps(rows, Which::SovereignNone),
    );
    let x = |r: Option<f64>| r.map_or_else(|| "–".to_string(), |r| format!("{r:.2}x"));
    println!();
    println!(
        "{:<24} {:>8} {:>8} {:>9} {:>8} {:>8} {:>10} {:>11} {:>7}",
        "target", "ok", "non-200", "req/s", "p50 ms", "p99 ms", "all ÷ it", "none ÷ it", "others"
    );
    for row in rows {
        match &row.outcome {
            Ok(m) => println!(
                "{:<24} {:>8} {:>8} {:>9.0} {:>8.3} {:>8.3} {:>10} {:>11} {:>6.1}%",
                row.which.name(),
                m.tally.ok,
                m.tally.errors,
                m.tally.rps,
                m.tally.p50_ms,
                m.tally.p99_ms,
                x(ratio(all, m.tally.rps)),
                x(ratio(none, m.tally.rps)),
                m.others_share * 100.0,
            ),
            Err(e) => println!("{:<24} NOT MEASURED: {e}", row.which.name()),
        }
    }
    println!();
    for row in rows {
        if let Ok(m) = &row.outcome {
            print!(
                "{} ({}): first answer {}",
                row.which.name(),
                row.which.version(upstream),
                m.probe,
            );
            if let Some(us) = m.target_cpu_us {
                print!("; {us} µs CPU per request in its processes");
            }
            print!(
                "; upstream + load generator {} µs per request; cores idle {:.1}%",
                m.harness_cpu_us,
                m.idle_share * 100.0
            );
            if let Some(e) = &m.tally.first_error {
                print!("; {} non-200, first: {e}", m.tally.errors);
            }
            println!();
        }
    }
    let noisy = rows
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok())
        .any(|m| m.others_share > 0.05);
    println!(
        "req/s and latency (service time, closed loop) per target; \"all ÷ it\" / \"none ÷ it\": \
         Sovereign's req/s (all policies / none) over the row's; \"others\": the share of all cores \
         other processes used meanwhile; load average {:.2} at start, {:.2} at end{}",
        load.0,
        load.1,
        if noisy {
            "  (NOISY: over 5% other load, figures are not representative)"
        } else {
            ""
        }
    );
}

pub(super) fn summary(args: &PeersArgs, upstream: &str, rows: &[Row], load: (f64, f64)) -> Value {
    let (all, none) = (
        rps(rows, Which::SovereignAll),
        rps(rows, Which::SovereignNone),
    );
    let targets: Vec<Value> = rows
        .iter()
        .map(|row| match &row.outcome {
            Ok(m) => json!({
                "target": row.which.name(),
                "version": row.which.version(upstream),
                "ok": m.tally.ok,
                "non_200": m.tally.errors,
                "first_error": m.tally.first_error,
                "rps": round3(m.tally.rps),
                "p50_ms": round3(m.tally.p50_ms),
                "p99_ms": round3(m.tally.p99_ms),
                "all_over_it": ratio(all, m.tally.rps).map(round3),
                "none_over_it": ratio(none, m.tally.rps).map(round3),
                "first_answer": m.probe,
                "checks": m.checks,
                "cpu_us_per_request": m.target_cpu_us,
                "others_cpu_share": round3(m.others_share),
                "harness_cpu_us_per_request": m.harness_cpu_us,
                "idle_share": round3(m.idle_share),
            }),
            Err(e) => {
                json!({"target": row.which.name(), "version": row.which.version(upstream), "error": e})
            }
        })
        .collect();
    json!({
        "bench": "sovereign-bench",
        "mode": "peers",
        "upstream": upstream,
        "load": format!("{:?}", args.load).to_lowercase(),
        "connections": args.connections,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "client_threads": args.client_threads,
        "max_tokens": args.max_tokens,
        "targets": targets,
        "loadavg_start": load.0,
        "loadavg_end": load.1,
    })
}
