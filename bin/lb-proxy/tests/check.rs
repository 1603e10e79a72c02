//! `lb-proxy check URL` against small servers on 127.0.0.1: plain HTTP answers, redirects,
//! failures, and HTTPS with a self-signed certificate (`openssl s_server`), as `curl -kLfs`.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Serves each of `answers` (raw HTTP responses) to one connection, in order; returns the URL.
fn serve(answers: Vec<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for answer in answers {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn response(status: &str, extra: &str) -> String {
    format!("HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n")
}

fn check(url: &str) -> i32 {
    Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
        .args(["check", url, "--timeout", "3s"])
        .status()
        .unwrap()
        .code()
        .unwrap()
}

#[test]
fn http_answers_and_redirects() {
    assert_eq!(
        check(&format!("{}/healthz", serve(vec![response("200 OK", "")]))),
        0
    );
    assert_eq!(
        check(&format!(
            "{}/",
            serve(vec![response("503 Service Unavailable", "")])
        )),
        1
    );
    assert_eq!(
        check(&format!("{}/", serve(vec![response("404 Not Found", "")]))),
        1
    );
    let url = serve(vec![
        response("302 Found", "Location: /ready\r\n"),
        response("204 No Content", ""),
    ]);
    assert_eq!(check(&format!("{url}/")), 0);
    // A 3xx with nowhere to go is a success for curl -f too.
    assert_eq!(
        check(&format!(
            "{}/",
            serve(vec![response("304 Not Modified", "")])
        )),
        0
    );
    // Nobody listening, or not HTTP at all.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_eq!(check(&format!("http://127.0.0.1:{closed}/")), 1);
    assert_eq!(
        check(&format!("{}/", serve(vec!["SSH-2.0-x\r\n".to_string()]))),
        1
    );
}

#[test]
fn a_bad_url_or_timeout_is_a_usage_error() {
    assert_eq!(check("ftp://127.0.0.1/"), 2);
    for timeout in ["0", "2d", "soon"] {
        let out = Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
            .args(["check", "http://127.0.0.1:1/", "--timeout", timeout])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--timeout {timeout}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a duration"));
    }
}

#[test]
fn https_with_a_self_signed_certificate() {
    if !ipi_lab::tool("openssl", "openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (key, cert) = (dir.path().join("key.pem"), dir.path().join("cert.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "openssl cannot make a certificate: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("openssl")
        .args(["s_server", "-www", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-key")
        .arg(&key)
        .arg("-cert")
        .arg(&cert)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Once s_server listens, one check must pass: no retrying until one happens to.
    let listening = ipi_lab::wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let code = listening.map(|_| check(&format!("https://127.0.0.1:{port}/")));
    let _ = server.kill();
    let _ = server.wait();
    assert!(listening.is_some(), "openssl s_server did not listen");
    assert_eq!(
        code,
        Some(0),
        "https with a self-signed certificate, as curl -k"
    );
}
