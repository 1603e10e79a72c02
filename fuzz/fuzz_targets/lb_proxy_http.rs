//! Fuzz what lb-proxy reads from the network and from `check`'s command line: the answer to a
//! health check (its head, and its body for `http-check expect string`), what a server says
//! to `tcp-check expect` rules, a request to a monitor or stats listener, URLs, and a
//! client's first bytes as TLS routing reads them (`req_ssl_hello_type`, `req_ssl_sni`). Arbitrary
//! bytes give an answer, a verdict or an error, never a panic, and every HTTP answer lb-proxy
//! writes is well formed.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lb_proxy::daemon::table::Table;
use lb_proxy::tcpcheck::{judge, Expect, Judgement, Step, BUFFER};

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let cfg = "frontend monitor\n  bind 127.0.0.1:9444\n  mode http\n  monitor-uri /haproxy_ready\n  \
                   monitor fail if { nbsrv(masters) lt 1 }\n\
                   listen stats\n  bind 127.0.0.1:29445\n  mode http\n  stats enable\n  stats uri /\n  \
                   stats auth admin:secret\n\
                   backend masters\n  server m0 192.0.2.10:6443 check\n";
        Table::build(lb_proxy::config::parse_str(cfg, "fuzz").expect("a valid config"), None)
    })
}

/// `tcp-check expect` rules of every kind, ready to run.
fn expects() -> &'static Vec<Expect> {
    static EXPECTS: OnceLock<Vec<Expect>> = OnceLock::new();
    EXPECTS.get_or_init(|| {
        let cfg = "backend b\n  option tcp-check\n  tcp-check expect string +PONG\n  \
                   tcp-check expect ! rstring ^-ERR\n  tcp-check expect binary 0d0a\n  \
                   tcp-check expect min-recv 5 rbinary ^1[56]\n  server s 192.0.2.1:1 check\n";
        let c = lb_proxy::config::parse_str(cfg, "fuzz").expect("a valid config");
        let rules = c.proxies[0].tcp_check.clone().expect("tcp-check rules");
        (lb_proxy::tcpcheck::steps(&rules, false).into_iter())
            .filter_map(|s| match s {
                Step::Expect(e) => Some(e),
                _ => None,
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    // A client's first bytes as TLS routing reads them: an answer or a wait, never a panic,
    // and a server name only from bytes that hold it.
    let _ = lb_proxy::hello::hello_type(data);
    if let lb_proxy::hello::Read::Found(name) = lb_proxy::hello::server_name(data) {
        assert!(name.len() <= data.len());
    }

    // A URL, and a Location against it.
    if let Ok(url) = lb_proxy::http::Url::parse(&text) {
        assert!(!url.host.is_empty() && url.path.starts_with('/'));
        let _ = url.join(&text);
    }

    // A request to the monitor and to the stats listener.
    let t = table();
    for web in t.webs.values() {
        let answer = lb_proxy::daemon::web::answer(&text, web, t);
        assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.parse::<usize>().ok())
            .expect("a content-length");
        assert_eq!(length, body.len());
    }

    // The answer to a health check.
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let stream = tokio::io::join(data, tokio::io::sink());
    if let Ok(a) = runtime.block_on(lb_proxy::http::exchange(stream, "GET / HTTP/1.0\r\n\r\n")) {
        assert!((100..1000).contains(&a.status));
    }
    let stream = tokio::io::join(data, tokio::io::sink());
    if let Ok(a) = runtime.block_on(lb_proxy::http::exchange_body(stream, "GET / HTTP/1.0\r\n\r\n")) {
        assert!(a.body.len() <= data.len());
    }

    // What a server says to tcp-check rules: a verdict, and never a wait once nothing more
    // can come.
    for e in expects() {
        assert_ne!(judge(e, data, true), Judgement::Wait);
        let verdict = judge(e, data, false);
        if data.len() >= BUFFER {
            assert_ne!(verdict, Judgement::Wait);
        }
    }
});
