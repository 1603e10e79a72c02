//! Waiting for a condition against a deadline.

use std::time::{Duration, Instant};

/// Polls `condition` every `every` until it holds or `timeout` has passed; returns how long it
/// took, or `None` on timeout.
pub fn wait_for(
    timeout: Duration,
    every: Duration,
    mut condition: impl FnMut() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if condition() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_for_reports_elapsed_or_timeout() {
        assert!(wait_for(Duration::ZERO, Duration::ZERO, || true).is_some());
        let mut n = 0;
        let took = wait_for(Duration::from_secs(5), Duration::from_millis(1), || {
            n += 1;
            n == 3
        });
        assert!(took.is_some());
        assert_eq!(n, 3);
        assert_eq!(
            wait_for(Duration::from_millis(5), Duration::from_millis(1), || false),
            None
        );
    }
}
