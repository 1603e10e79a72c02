//! Faster track-script moves (vrrpd's `preempt_on_lower_priority`), judged by a client: a
//! track script starts failing on the master (a flag file goes), and a third host connects to
//! the VIP until the other router answers. With the keyword the backup takes over Skew_Time
//! after the master advertises its lower priority (at once, when the script's result comes);
//! without it (vrrpd's default, and keepalived) the backup discards those adverts (RFC 3768 /
//! 5798 6.4.2) and waits for its Master_Down_Interval. Scenario: `track_move/mod.rs`.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use ipi_net_tests::vrrp::Speaker;
use track_move::{Mode, CHECK_INTERVAL};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;
mod track_move;

#[test]
fn a_failing_track_script_moves_the_vip_within_interval_plus_skew_time() {
    if !ipi_lab::available() || !ipi_lab::tool("keepalived", "keepalived") {
        return;
    }
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let run = |speaker, keyword| {
        let mode = Mode { speaker, keyword };
        let took = track_move::run(mode, &vrrpd).unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "{}: the client reached b {took:?} after the flag went",
            mode.name()
        );
        took
    };
    let fast = run(Speaker::Vrrpd, true);
    let slow = run(Speaker::Vrrpd, false);
    let keepalived = run(Speaker::Keepalived, false);

    let skew = track_move::skew_time();
    let mdi = track_move::group().master_down_interval(track_move::BACKUP);
    let advert = Duration::from_millis(u64::from(track_move::group().advert_int_cs) * 10);
    // The goal: the script's next run (within one interval), then Skew_Time, plus 100 ms; and
    // 150 ms for a loaded 2-core box (the script's process, the client's back-to-back probes of
    // 50 ms each).
    let bound = CHECK_INTERVAL + skew + Duration::from_millis(100 + 150);
    assert!(
        fast <= bound,
        "with the keyword: {fast:?}, more than {bound:?}"
    );
    // Without it the backup waits Master_Down_Interval from the last advert it accepted, at
    // most one advert interval before the drop: never less than MDI - interval after the flag.
    let floor = mdi - advert;
    assert!(
        slow >= floor,
        "without the keyword: {slow:?}, less than {floor:?}"
    );
    assert!(
        keepalived >= floor,
        "keepalived: {keepalived:?}, less than {floor:?}"
    );
    eprintln!(
        "track failure -> client served by the new master: vrrpd with the keyword {:.3} s, \
         without {:.3} s, keepalived {:.3} s (bound {:.3} s, MDI {:.3} s)",
        fast.as_secs_f64(),
        slow.as_secs_f64(),
        keepalived.as_secs_f64(),
        bound.as_secs_f64(),
        mdi.as_secs_f64()
    );
}
