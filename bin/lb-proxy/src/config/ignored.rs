//! What haproxy.cfg holds that lb-proxy accepts without effect, each with the warning that
//! says why: haproxy's process management in `global` (systemd runs lb-proxy), TLS and buffer
//! tuning for what lb-proxy does not do, and HTTP settings in a TCP section, which haproxy
//! itself ignores there.

/// `stats socket|timeout|maxconn` in global.
pub const STATS_SOCKET: &str = "`stats` in global ignored: lb-proxy has no runtime API \
     socket (its stats page is a `stats enable` listener)";

/// Process management: systemd's unit does it for lb-proxy.
const PROCESS: &[&str] = &[
    "chroot",
    "pidfile",
    "user",
    "group",
    "uid",
    "gid",
    "daemon",
    "nbproc",
    "nbthread",
    "ulimit-n",
    "master-worker",
    "cpu-map",
    "hard-stop-after",
    "node",
    "description",
    "setenv",
    "presetenv",
];

/// TLS material and settings of haproxy's own TLS (binds, servers).
const TLS: &[&str] = &[
    "ca-base",
    "crt-base",
    "ssl-default-bind-ciphers",
    "ssl-default-bind-ciphersuites",
    "ssl-default-bind-options",
    "ssl-default-server-ciphers",
    "ssl-default-server-ciphersuites",
    "ssl-default-server-options",
    "ssl-server-verify",
    "ssl-dh-param-file",
];

/// The warning for a global keyword lb-proxy accepts without effect; None for one it does
/// not know.
pub fn global(kw: &str) -> Option<String> {
    if PROCESS.contains(&kw) {
        return Some(format!(
            "`{kw}` ignored: systemd runs lb-proxy, and its unit sets the process's root, \
             user, limits and threads"
        ));
    }
    if TLS.contains(&kw) {
        return Some(format!(
            "`{kw}` ignored: lb-proxy terminates no TLS, and its TLS health checks use \
             rustls' defaults without verifying"
        ));
    }
    kw.starts_with("tune.").then(|| {
        format!("`{kw}` ignored: haproxy's buffer and TLS tuning has no counterpart in lb-proxy")
    })
}

/// Options that need `mode http`; in `mode tcp` haproxy ignores them (and warns for some).
const HTTP_OPTIONS: &[&str] = &[
    "httplog",
    "http-server-close",
    "httpclose",
    "forwardfor",
    "http-keep-alive",
    "http-pretend-keepalive",
    "http-buffer-request",
    "http-no-delay",
    "forceclose",
];

/// Whether `option NAME` is one of [`HTTP_OPTIONS`].
pub fn http_option(name: &str) -> bool {
    HTTP_OPTIONS.contains(&name)
}

/// Timeouts that only HTTP uses.
pub fn http_timeout(name: &str) -> bool {
    matches!(name, "http-keep-alive" | "http-request")
}

/// haproxy's warning for the HTTP-only `setting` in the TCP section `name` of kind `kind`
/// (`frontend`, `backend`, `proxy` for listen).
pub fn http_only_warning(setting: &str, kind: &str, name: &str) -> String {
    if setting == "option httplog" {
        format!(
            "'option httplog' not usable with {kind} '{name}' (needs 'mode http'). Falling \
             back to 'option tcplog'."
        )
    } else {
        format!("'{setting}' ignored for {kind} '{name}' as it requires HTTP mode.")
    }
}

/// Proxy keywords of HTTP routing, rewriting and stickiness: refused, as lb-proxy balances
/// TCP connections only.
pub fn http_routing(kw: &str) -> bool {
    matches!(
        kw,
        "acl"
            | "use_backend"
            | "use-server"
            | "http-request"
            | "http-response"
            | "http-after-response"
            | "redirect"
            | "cookie"
            | "capture"
            | "stick-table"
            | "stick"
            | "tcp-request"
            | "tcp-response"
    )
}

/// The warning for a `stats` option of haproxy's stats page that lb-proxy's does not have.
pub fn stats_option(option: &str) -> Option<String> {
    let why = match option {
        "show-node" | "show-desc" | "show-legends" | "realm" => {
            "lb-proxy's stats page does not show it"
        }
        "admin" => "lb-proxy's stats page is read-only",
        _ => return None,
    };
    Some(format!("`stats {option}` ignored: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_keywords_are_warned_about_or_unknown() {
        assert!(global("chroot").unwrap().contains("systemd"));
        assert!(global("ssl-default-bind-ciphers")
            .unwrap()
            .contains("no TLS"));
        assert!(global("tune.ssl.default-dh-param")
            .unwrap()
            .contains("tuning"));
        assert_eq!(global("chrooot"), None);
        assert_eq!(
            http_only_warning("option forwardfor", "frontend", "k"),
            "'option forwardfor' ignored for frontend 'k' as it requires HTTP mode."
        );
    }
}
