//! The heartbeat of an event loop that forwards connections, while connections come.
//!
//! tokio's timer wheel wakes its own event loop (a write to its eventfd, and an epoll_wait
//! that returns at once) whenever a timer is armed that is due before every other. Each new
//! connection arms its connect timeout (and with `race-connect` its race delay), so on a loop
//! with no earlier timer every connection cost one system call and one wake-up for nothing.
//! While connections come, [`Pulse::run`] keeps a timer due within [`HEARTBEAT`]: two timers
//! half a period apart, each armed again when it fires and then due after the other, so the
//! heartbeat never wakes the loop itself either. A second without a new connection stops it:
//! an idle proxy does not wake at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{interval_at, sleep, Instant, MissedTickBehavior};

/// How far away the next tick is at most: below the connect timeouts and `race-connect`
/// delays connections arm.
pub const HEARTBEAT: Duration = Duration::from_millis(100);

/// How long the heartbeat goes on without a new connection.
const LINGER: Duration = Duration::from_secs(1);

/// One event loop's heartbeat: told of every new connection, beating while they come.
#[derive(Debug, Default)]
pub struct Pulse {
    /// A connection came since the heartbeat last looked.
    busy: AtomicBool,
    /// Wakes a stopped heartbeat.
    wake: Notify,
}

impl Pulse {
    /// A connection was accepted. Costs a load while the heartbeat beats.
    pub fn beat(&self) {
        if !self.busy.load(Ordering::Relaxed) && !self.busy.swap(true, Ordering::Relaxed) {
            self.wake.notify_one();
        }
    }

    /// Beats while connections come, forever; run it on the event loop it is for.
    pub async fn run(&self) {
        loop {
            self.wake.notified().await;
            let idle = async {
                loop {
                    sleep(LINGER).await;
                    if !self.busy.swap(false, Ordering::Relaxed) {
                        return;
                    }
                }
            };
            tokio::select! {
                () = idle => {}
                () = beating() => {}
            }
        }
    }
}

/// Two timers of period 2 x [`HEARTBEAT`], [`HEARTBEAT`] apart: one is always due within it.
async fn beating() {
    let beat = |offset: Duration| async move {
        let mut tick = interval_at(Instant::now() + offset, HEARTBEAT * 2);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
        }
    };
    tokio::join!(beat(HEARTBEAT / 2), beat(HEARTBEAT * 3 / 2));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn beats_while_connections_come_and_stops_when_they_do_not() {
        let pulse = std::sync::Arc::new(Pulse::default());
        let runner = std::sync::Arc::clone(&pulse);
        tokio::spawn(async move { runner.run().await });
        tokio::task::yield_now().await;
        assert!(
            !pulse.busy.load(Ordering::Relaxed),
            "idle until a connection"
        );
        pulse.beat();
        assert!(pulse.busy.load(Ordering::Relaxed));
        // The heartbeat looks every LINGER: the connection's mark is taken...
        sleep(LINGER + HEARTBEAT).await;
        assert!(
            !pulse.busy.load(Ordering::Relaxed),
            "taken by the heartbeat"
        );
        // ...and a connection now marks it again without a wake-up.
        pulse.beat();
        assert!(pulse.busy.load(Ordering::Relaxed));
        sleep(LINGER * 3).await;
        assert!(!pulse.busy.load(Ordering::Relaxed));
    }
}
