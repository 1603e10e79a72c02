//! The stats page: one snapshot of the table ([`snapshot`]) shown as JSON, as text, and as
//! Prometheus metrics named like haproxy's exporter.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::{json, Value};

use super::table::{lock, Table};

/// When the process started (for the uptime).
pub fn started() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Everything the stats show, as JSON.
pub fn snapshot(table: &Table, hide_version: bool) -> Value {
    let mut frontends: Vec<_> = table.frontends.values().collect();
    frontends.sort_by(|a, b| a.name.cmp(&b.name));
    let frontends: Vec<Value> = frontends
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "current_sessions": f.active.load(Ordering::Relaxed),
                "sessions_total": f.sessions.load(Ordering::Relaxed),
                "maxconn": f.maxconn,
            })
        })
        .collect();
    let backends: Vec<Value> = table
        .backends
        .iter()
        .map(|b| {
            let servers: Vec<Value> = b
                .servers
                .iter()
                .map(|s| {
                    let health = *lock(&s.health);
                    json!({
                        "name": s.cfg.name,
                        "address": s.cfg.address.to_string(),
                        "status": if s.is_up() { "UP" } else { "DOWN" },
                        "checked": s.cfg.check,
                        "health": health.value(),
                        "health_max": s.cfg.rise.max(1) + s.cfg.fall.max(1) - 1,
                        "weight": s.cfg.weight,
                        "effective_weight": s.weight(),
                        "current_sessions": s.active.load(Ordering::Relaxed),
                        "sessions_total": s.sessions.load(Ordering::Relaxed),
                        "connection_errors_total": s.connect_errors.load(Ordering::Relaxed),
                        "check_failures_total": s.failed_checks.load(Ordering::Relaxed),
                        "check_up_down_total": s.downs.load(Ordering::Relaxed),
                        "bytes_in_total": s.moved.up.load(Ordering::Relaxed),
                        "bytes_out_total": s.moved.down.load(Ordering::Relaxed),
                        "last_check": lock(&s.last_check).clone(),
                    })
                })
                .collect();
            json!({ "name": b.name, "active_servers": b.up_count(), "servers": servers })
        })
        .collect();
    let mut v = json!({
        "uptime_seconds": started().elapsed().as_secs(),
        "frontends": frontends,
        "backends": backends,
    });
    if !hide_version {
        v["version"] = json!(env!("CARGO_PKG_VERSION"));
    }
    v
}

/// The stats as JSON text.
pub fn json(table: &Table, hide_version: bool) -> String {
    let mut s = serde_json::to_string_pretty(&snapshot(table, hide_version)).unwrap_or_default();
    s.push('\n');
    s
}

/// The stats as a plain-text table.
pub fn text(table: &Table, hide_version: bool) -> String {
    let v = snapshot(table, hide_version);
    let mut out = String::new();
    if let Some(version) = v["version"].as_str() {
        let _ = writeln!(out, "lb-proxy {version}");
    }
    let _ = writeln!(out, "uptime {} s", v["uptime_seconds"]);
    for f in v["frontends"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "frontend {}: {} sessions now (maxconn {}), {} in all",
            str(&f["name"]),
            f["current_sessions"],
            f["maxconn"],
            f["sessions_total"]
        );
    }
    for b in v["backends"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "backend {}: {} server(s) UP",
            str(&b["name"]),
            b["active_servers"]
        );
        for s in b["servers"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  {} {} {} health {}/{} weight {} sessions {} now {} connect errors {} failed checks {} {}",
                str(&s["name"]),
                str(&s["address"]),
                str(&s["status"]),
                s["health"],
                s["health_max"],
                s["effective_weight"],
                s["current_sessions"],
                s["sessions_total"],
                s["connection_errors_total"],
                s["check_failures_total"],
                str(&s["last_check"])
            );
        }
    }
    out
}

fn str(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The stats as Prometheus text exposition, with haproxy exporter's metric names.
pub fn prometheus(table: &Table) -> String {
    let v = snapshot(table, false);
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, &Value)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    };
    let frontends: Vec<&Value> = v["frontends"].as_array().into_iter().flatten().collect();
    let label = |f: &Value| format!("proxy=\"{}\"", str(&f["name"]));
    for (name, key, kind, help) in [
        (
            "haproxy_frontend_current_sessions",
            "current_sessions",
            "gauge",
            "Connections now.",
        ),
        (
            "haproxy_frontend_sessions_total",
            "sessions_total",
            "counter",
            "Connections accepted.",
        ),
        (
            "haproxy_frontend_limit_sessions",
            "maxconn",
            "gauge",
            "The maxconn of the frontend.",
        ),
    ] {
        metric(
            name,
            kind,
            help,
            frontends.iter().map(|f| (label(f), &f[key])).collect(),
        );
    }
    let backends: Vec<&Value> = v["backends"].as_array().into_iter().flatten().collect();
    metric(
        "haproxy_backend_active_servers",
        "gauge",
        "Servers UP.",
        backends
            .iter()
            .map(|b| (label(b), &b["active_servers"]))
            .collect(),
    );
    let servers: Vec<(String, &Value)> = backends
        .iter()
        .flat_map(|b| {
            b["servers"].as_array().into_iter().flatten().map(move |s| {
                (
                    format!(
                        "proxy=\"{}\",server=\"{}\"",
                        str(&b["name"]),
                        str(&s["name"])
                    ),
                    s,
                )
            })
        })
        .collect();
    let up: Vec<Value> = servers
        .iter()
        .map(|(_, s)| json!(u8::from(s["status"] == "UP")))
        .collect();
    metric(
        "haproxy_server_status",
        "gauge",
        "1 when the server is UP, 0 when DOWN.",
        servers
            .iter()
            .zip(&up)
            .map(|((l, _), u)| (l.clone(), u))
            .collect(),
    );
    for (name, key, kind, help) in [
        (
            "haproxy_server_current_sessions",
            "current_sessions",
            "gauge",
            "Connections now.",
        ),
        (
            "haproxy_server_sessions_total",
            "sessions_total",
            "counter",
            "Connections in all.",
        ),
        (
            "haproxy_server_connection_errors_total",
            "connection_errors_total",
            "counter",
            "Failed connection attempts.",
        ),
        (
            "haproxy_server_check_failures_total",
            "check_failures_total",
            "counter",
            "Failed health checks.",
        ),
        (
            "haproxy_server_check_up_down_total",
            "check_up_down_total",
            "counter",
            "Times the server went DOWN.",
        ),
        (
            "haproxy_server_weight",
            "effective_weight",
            "gauge",
            "Effective weight (scaled by 16).",
        ),
        (
            "haproxy_server_bytes_in_total",
            "bytes_in_total",
            "counter",
            "Bytes from clients.",
        ),
        (
            "haproxy_server_bytes_out_total",
            "bytes_out_total",
            "counter",
            "Bytes to clients.",
        ),
    ] {
        metric(
            name,
            kind,
            help,
            servers.iter().map(|(l, s)| (l.clone(), &s[key])).collect(),
        );
    }
    metric(
        "haproxy_process_uptime_seconds",
        "gauge",
        "Seconds since the process started.",
        vec![(String::new(), &v["uptime_seconds"])],
    );
    out
}
