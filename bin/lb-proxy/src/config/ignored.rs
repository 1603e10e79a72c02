//! What haproxy.cfg holds that lb-proxy accepts without effect, each with the warning that
//! says why: haproxy's process management in `global` (systemd runs lb-proxy), TLS and buffer
//! tuning for what lb-proxy does not do, and HTTP settings in a TCP section, which haproxy
//! itself ignores there.

/// `stats socket|timeout|maxconn` in global.
pub const STATS_SOCKET: &str = "`stats` in global ignored (haproxy would open its runtime API \
     socket there): lb-proxy has no runtime API socket (its stats page is a `stats enable` \
     listener)";

/// Process management, with what haproxy 2.6 does with each: systemd's unit does it for
/// lb-proxy.
const PROCESS: &[(&str, &str)] = &[
    (
        "chroot",
        "haproxy would chroot into the directory once started",
    ),
    ("pidfile", "haproxy would write its PID into the file"),
    ("user", "haproxy would drop its privileges to this user"),
    ("group", "haproxy would drop its privileges to this group"),
    ("uid", "haproxy would drop its privileges to this user id"),
    ("gid", "haproxy would drop its privileges to this group id"),
    ("daemon", "haproxy would fork into the background"),
    (
        "nbproc",
        "haproxy 2.6 refuses it: processes were removed in 2.5, threads are used",
    ),
    ("nbthread", "haproxy would run this many threads"),
    (
        "ulimit-n",
        "haproxy would raise its open-files limit to this",
    ),
    (
        "master-worker",
        "haproxy would run a master process that starts the workers again on reload",
    ),
    ("cpu-map", "haproxy would pin its threads to these CPUs"),
    (
        "hard-stop-after",
        "haproxy would kill an old process this long after a reload or soft stop",
    ),
    ("node", "haproxy would show the name on its stats page"),
    (
        "description",
        "haproxy would show the description on its stats page",
    ),
    ("setenv", "haproxy would set the environment variable"),
    (
        "presetenv",
        "haproxy would set the environment variable unless already set",
    ),
];

/// TLS material and settings of haproxy's own TLS (binds, servers), with what haproxy does.
const TLS: &[(&str, &str)] = &[
    (
        "ca-base",
        "haproxy would read relative CA file names from there",
    ),
    (
        "crt-base",
        "haproxy would read relative certificate file names from there",
    ),
    (
        "ssl-default-bind-ciphers",
        "haproxy would offer these ciphers on its TLS binds",
    ),
    (
        "ssl-default-bind-ciphersuites",
        "haproxy would offer these TLS 1.3 suites on its TLS binds",
    ),
    (
        "ssl-default-bind-options",
        "haproxy would apply these options to its TLS binds",
    ),
    (
        "ssl-default-server-ciphers",
        "haproxy would offer these ciphers to TLS servers",
    ),
    (
        "ssl-default-server-ciphersuites",
        "haproxy would offer these TLS 1.3 suites to TLS servers",
    ),
    (
        "ssl-default-server-options",
        "haproxy would apply these options to TLS servers",
    ),
    (
        "ssl-server-verify",
        "haproxy would (or would not) verify its TLS servers' certificates",
    ),
    (
        "ssl-dh-param-file",
        "haproxy would use these DH parameters on its TLS binds",
    ),
];

/// What haproxy does with `kw`, from a table.
fn upstream(table: &[(&str, &'static str)], kw: &str) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == kw).map(|(_, does)| *does)
}

/// The warning for a global keyword lb-proxy accepts without effect, saying what haproxy
/// would have done; None for one it does not know.
pub fn global(kw: &str) -> Option<String> {
    if let Some(does) = upstream(PROCESS, kw) {
        return Some(format!(
            "`{kw}` ignored ({does}): systemd runs lb-proxy, and its unit sets the process's \
             root, user, limits and threads"
        ));
    }
    if let Some(does) = upstream(TLS, kw) {
        return Some(format!(
            "`{kw}` ignored ({does}): lb-proxy terminates no TLS, and its TLS health checks \
             use rustls' defaults without verifying"
        ));
    }
    kw.starts_with("tune.").then(|| {
        format!(
            "`{kw}` ignored (haproxy would change this buffer or TLS limit): haproxy's \
             tuning has no counterpart in lb-proxy"
        )
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
    let (does, why) = match option {
        "show-node" => (
            "haproxy would show the node's name on the page",
            "lb-proxy's stats page does not show it",
        ),
        "show-desc" => (
            "haproxy would show the description on the page",
            "lb-proxy's stats page does not show it",
        ),
        "show-legends" => (
            "haproxy would explain each server's settings on the page",
            "lb-proxy's stats page does not show them",
        ),
        "realm" => (
            "haproxy would name this realm in its login prompt",
            "lb-proxy's login prompt keeps haproxy's default, `HAProxy Statistics`",
        ),
        "admin" => (
            "haproxy would let the page's users turn servers off and on when the condition holds",
            "lb-proxy's stats page is read-only",
        ),
        _ => return None,
    };
    Some(format!("`stats {option}` ignored ({does}): {why}"))
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
