//! The second shape, issue 34's independent harness: the root network namespace (loopback
//! only: nothing leaves the machine), nginx with one worker serving 1 KiB on 127.0.0.1
//! (`reuseport backlog=4096`, nginx's defaults otherwise, so its keep-alive connections end
//! after 1,000 requests), the proxy on 127.0.0.1 with a four-line TCP haproxy.cfg (`mode
//! tcp`, `maxconn 8000`, `timeout connect 10s`, `timeout client/server 1m`, one server, no
//! checks), lb-proxy's default `run` and haproxy's default, wrk -t1 -c50 -d4s keep-alive and
//! then with `Connection: close`, rounds alternating. So that the README never shows only
//! the shape that suits lb-proxy.

use std::process::Command;
use std::time::Duration;

use ipi_lab::Daemon;

use super::{parse_wrk, wrk_args, Proxy};

/// The rows it adds to the table, in order: (label, unit, higher is better).
pub const LABELS: [(&str, &str, bool); 4] = [
    ("root ns, 4-line cfg: requests/s, keep-alive", "req/s", true),
    (
        "root ns, 4-line cfg: proxy CPU per keep-alive request",
        "us",
        false,
    ),
    ("root ns, 4-line cfg: new connections/s", "conn/s", true),
    (
        "root ns, 4-line cfg: proxy CPU per new connection",
        "us",
        false,
    ),
];

/// A free port on 127.0.0.1 just now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// What the shape runs on: nginx started, the proxy's file written.
pub struct Bench {
    dir: tempfile::TempDir,
    _nginx: Daemon,
    front: u16,
    config: std::path::PathBuf,
}

impl Bench {
    pub fn start() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let (back, front) = (free_port(), free_port());
        let d = dir.path().display();
        std::fs::create_dir_all(dir.path().join("www")).unwrap();
        std::fs::write(dir.path().join("www/1k"), vec![b'x'; 1024]).unwrap();
        let conf = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log stderr warn;\n\
             events {{ worker_connections 8192; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  \
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fcgi;\n  \
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             server {{ listen 127.0.0.1:{back} reuseport backlog=4096; root {d}/www; }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let mut nginx = Command::new("nginx");
        nginx
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .args(["-e", "stderr"]);
        let nginx = Daemon::start("nginx", nginx, dir.path()).unwrap();
        let config = dir.path().join("proxy.cfg");
        std::fs::write(
            &config,
            format!(
                "defaults\n    mode tcp\n    maxconn 8000\n    timeout connect 10s\n    \
                 timeout client 1m\n    timeout server 1m\n\
                 frontend f\n    bind 127.0.0.1:{front}\n    default_backend b\n\
                 backend b\n    server s1 127.0.0.1:{back}\n"
            ),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        Bench {
            dir,
            _nginx: nginx,
            front,
            config,
        }
    }

    /// One round of `p`: started afresh, keep-alive then close, stopped; in [`LABELS`]' order.
    pub fn round(&self, p: Proxy) -> [f64; 4] {
        let cfg = self.config.to_str().unwrap();
        let command = match p {
            Proxy::Haproxy => {
                let mut c = Command::new("haproxy");
                c.args(["-db", "-f", cfg]);
                c
            }
            Proxy::LbProxy => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_lb-proxy"));
                c.args(["run", "-q", "-f", cfg]);
                c
            }
        };
        let mut proxy = Daemon::start(&format!("{p:?}"), command, self.dir.path()).unwrap();
        let up = ipi_lab::wait_for(Duration::from_secs(10), Duration::from_millis(50), || {
            std::net::TcpStream::connect(("127.0.0.1", self.front)).is_ok()
        });
        assert!(up.is_some(), "{p:?} did not start: {}", proxy.log());
        let keep = self.wrk(&proxy, false);
        let close = self.wrk(&proxy, true);
        proxy.stop();
        [keep.0, keep.1, close.0, close.1]
    }

    /// wrk through the proxy: (requests/s, the proxy's CPU microseconds per request).
    fn wrk(&self, proxy: &Daemon, close: bool) -> (f64, f64) {
        let before = proxy.usage().cpu;
        let out = Command::new("wrk")
            .args(wrk_args(self.front, "/1k", close, "4"))
            .output()
            .unwrap();
        let w = parse_wrk(&String::from_utf8_lossy(&out.stdout));
        let cpu = proxy.usage().cpu.saturating_sub(before);
        (w.rate, cpu.as_secs_f64() * 1e6 / w.requests)
    }
}
