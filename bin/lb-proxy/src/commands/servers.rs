//! `lb-proxy check --servers URL`: what lb-proxy's stats page (`URL;json`) says of the servers,
//! for a person or a track script: every server that is not UP and why (its last check, or
//! passive health: refused connections, lost connect races), one line each.

use serde_json::Value;

/// The report of a stats snapshot (the `;json` page): a line per backend (servers UP of all),
/// then one per server that is not UP with its reasons; true when every backend has a server
/// UP. Err names what is missing when `stats` is not lb-proxy's snapshot.
pub fn report(stats: &Value) -> Result<(String, bool), String> {
    let backends = stats["backends"]
        .as_array()
        .ok_or("no \"backends\" list: not lb-proxy's stats page")?;
    let mut out = String::new();
    let mut all_served = true;
    for backend in backends {
        let name = backend["name"].as_str().unwrap_or("?");
        let servers = backend["servers"].as_array().map_or(&[][..], Vec::as_slice);
        let up = servers.iter().filter(|s| s["status"] == "UP").count();
        all_served &= up > 0;
        out.push_str(&format!("{name}: {up} of {} servers UP\n", servers.len()));
        for server in servers.iter().filter(|s| s["status"] != "UP") {
            out.push_str(&format!("  {}\n", server_line(server)));
        }
    }
    Ok((out, all_served))
}

/// `NAME STATUS: check: WHY; passive: N DOWN, M races lost, last: WHY`.
fn server_line(server: &Value) -> String {
    let text = |key: &str| server[key].as_str().unwrap_or_default().to_owned();
    let count = |key: &str| server[key].as_u64().unwrap_or_default();
    let mut why = Vec::new();
    if !text("last_check").is_empty() {
        why.push(format!("check: {}", text("last_check")));
    }
    if count("passive_actions_total") > 0 || count("races_lost_total") > 0 {
        why.push(format!(
            "passive: {} DOWN, {} race(s) lost, last: {}",
            count("passive_downs_total"),
            count("races_lost_total"),
            text("last_passive")
        ));
    }
    let status = server["status"].as_str().unwrap_or("?");
    match why.is_empty() {
        true => format!("{} {status}", text("name")),
        false => format!("{} {status}: {}", text("name"), why.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_servers_with_their_reasons() {
        let stats = serde_json::json!({"backends": [
            {"name": "masters", "servers": [
                {"name": "m0", "status": "DOWN", "last_check": "",
                 "passive_actions_total": 1, "passive_downs_total": 1, "races_lost_total": 0,
                 "last_passive": "1 consecutive connection error(s)"},
                {"name": "m1", "status": "UP", "last_check": ""},
                {"name": "m2", "status": "DOWN", "last_check": "HTTP 503",
                 "passive_actions_total": 0, "races_lost_total": 0}]},
            {"name": "empty", "servers": []}]});
        let (text, served) = report(&stats).unwrap();
        assert_eq!(
            text,
            "masters: 1 of 3 servers UP\n  \
             m0 DOWN: passive: 1 DOWN, 0 race(s) lost, last: 1 consecutive connection error(s)\n  \
             m2 DOWN: check: HTTP 503\n\
             empty: 0 of 0 servers UP\n"
        );
        assert!(!served, "a backend without a server UP");
        assert!(report(&serde_json::json!({"x": 1})).is_err());
    }
}
