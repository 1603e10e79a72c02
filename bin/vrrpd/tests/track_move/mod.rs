//! A track script starts failing on the master; how long until a client is served through the
//! VIP by the other router. Shared by `tests/lab_track_move.rs` and `benches/track_move.rs`.
//!
//! Two routers run OpenShift's VRRPv2 group (1 s adverts, PASS): a at priority 100 tracking a
//! script worth +50 while it succeeds (`test -f FLAG`, every second, rise and fall 1: OpenShift's
//! `chk_ingress`), b at 120 without one. a holds the VIP at 150; the flag goes, a drops to 100,
//! below b. A third host connects to the VIP (each router answers with its name) back to back
//! until b answers.

use std::path::Path;
use std::time::{Duration, Instant};

use ipi_lab::{wait_for, Lab};
use ipi_net_tests::vrrp::{Group, Router, Speaker};

use super::support;

/// a's priority with the script failing; b's; a's with it succeeding.
pub const LOW: u8 = 100;
/// b's priority.
pub const BACKUP: u8 = 120;
/// The script's weight.
pub const WEIGHT: u8 = 50;
/// The script's interval.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Which program runs, and with vrrpd's `preempt_on_lower_priority` or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// keepalived or vrrpd on both routers.
    pub speaker: Speaker,
    /// `preempt_on_lower_priority` on both (vrrpd only).
    pub keyword: bool,
}

impl Mode {
    /// How the mode is called in reports.
    pub fn name(self) -> &'static str {
        match (self.speaker, self.keyword) {
            (Speaker::Vrrpd, true) => "vrrpd preempt_on_lower_priority",
            (Speaker::Vrrpd, false) => "vrrpd",
            (Speaker::Keepalived, _) => "keepalived",
        }
    }
}

/// The group every run uses.
pub fn group() -> Group {
    Group::v2_pass()
}

/// RFC 3768 6.1: Skew_Time of the backup, ((256 - 120) / 256) s.
pub fn skew_time() -> Duration {
    Duration::from_millis((256 - u64::from(BACKUP)) * u64::from(group().advert_int_cs) * 10 / 256)
}

/// One run: from removing the flag to the first connection through the VIP that b answered
/// (the start of that attempt; attempts run back to back, each given 50 ms).
pub fn run(mode: Mode, vrrpd: &Path) -> Result<Duration, String> {
    let group = group();
    let vip = group.vips()[0];
    let mut lab = Lab::new().map_err(|e| e.to_string())?;
    let host = |lab: &mut Lab, name: &str| lab.host(name).map_err(|e| e.to_string());
    let (a, b, client) = (
        host(&mut lab, "a")?,
        host(&mut lab, "b")?,
        host(&mut lab, "client")?,
    );
    let _answer = [&a, &b].map(support::Responder::start);
    let flag = a.dir().join("healthy");
    std::fs::write(&flag, "").map_err(|e| e.to_string())?;
    let keyword = if mode.keyword {
        "vrrp_instance VI_4 {\n    preempt_on_lower_priority"
    } else {
        "vrrp_instance VI_4 {"
    };
    let tracked = group.config("a", LOW).replacen(
        "vrrp_instance VI_4 {",
        &format!(
            "vrrp_script chk {{\n    script \"/usr/bin/test -f {}\"\n    interval {}\n    \
             weight {WEIGHT}\n}}\n\n{keyword}\n    track_script {{\n        chk\n    }}",
            flag.display(),
            CHECK_INTERVAL.as_secs()
        ),
        1,
    );
    let plain = group
        .config("b", BACKUP)
        .replacen("vrrp_instance VI_4 {", keyword, 1);
    let vrrpd = vrrpd.to_path_buf();
    let start = |h, text: &str, p| {
        Router::start_with(h, mode.speaker, text, p, Some(&vrrpd)).map_err(|e| e.to_string())
    };
    let ra = start(&a, &tracked, LOW + WEIGHT)?;
    let rb = start(&b, &plain, BACKUP)?;
    let logs = || format!("{}\n{}", ra.daemon.log(), rb.daemon.log());
    let answers = || support::answers_within(&client, vip, Duration::from_millis(50));
    wait_for(Duration::from_secs(20), Duration::from_millis(20), || {
        ra.holds(&group) && !rb.holds_any(&group) && answers().as_deref() == Some("a")
    })
    .ok_or_else(|| format!("{}: a never held the VIP alone\n{}", mode.name(), logs()))?;
    // Past the second burst of gratuitous ARPs of a's takeover is not needed: b's own
    // announcement is what moves the client. Two of a's adverts settle b's timers.
    std::thread::sleep(Duration::from_millis(2_500));
    std::fs::remove_file(&flag).map_err(|e| e.to_string())?;
    let failed = Instant::now();
    loop {
        let attempt = Instant::now();
        if answers().as_deref() == Some("b") {
            return Ok(attempt - failed);
        }
        if failed.elapsed() > Duration::from_secs(15) {
            return Err(format!(
                "{}: the client never reached b\n{}",
                mode.name(),
                logs()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
