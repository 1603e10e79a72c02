//! The VRRP timers as the RFCs write them, for the tests' expected times: written here from
//! RFC 3768 6.1 (v2) and RFC 5798 6.1 (v3) instead of taken from `ipi_core::vrrp::timers`, the
//! code under test, so that a wrong timer there cannot move the expectation with it.

use std::time::Duration;

use ipi_core::vrrp::Version;

/// Skew_Time: v2 `(256 - Priority) / 256` seconds whatever the interval; v3
/// `((256 - Priority) * Master_Adver_Interval) / 256`. Rounded down to a whole centisecond,
/// the unit vrrpd and keepalived's v3 adverts count in.
pub fn skew_time(version: Version, priority: u8, advert: Duration) -> Duration {
    let weight = 256 - u128::from(priority);
    let basis = match version {
        Version::V2 => Duration::from_secs(1),
        Version::V3 => advert,
    };
    let ms = weight * basis.as_millis() / 256;
    Duration::from_millis(u64::try_from(ms / 10 * 10).unwrap_or(u64::MAX))
}

/// Master_Down_Interval: `3 * Advertisement_Interval + Skew_Time` (v2),
/// `3 * Master_Adver_Interval + Skew_Time` (v3).
pub fn master_down_interval(version: Version, priority: u8, advert: Duration) -> Duration {
    3 * advert + skew_time(version, priority, advert)
}

/// An advert interval given in centiseconds, as the configs here write it.
pub fn centis(cs: u16) -> Duration {
    Duration::from_millis(u64::from(cs) * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfcs_examples_by_hand() {
        // v2, priority 100: 156 / 256 s = 609.4 ms, 600 ms in whole centiseconds; the interval
        // does not matter.
        assert_eq!(
            skew_time(Version::V2, 100, centis(100)),
            Duration::from_millis(600)
        );
        assert_eq!(
            skew_time(Version::V2, 100, centis(300)),
            Duration::from_millis(600)
        );
        assert_eq!(
            master_down_interval(Version::V2, 100, centis(100)),
            Duration::from_millis(3600)
        );
        // v3, priority 120, 1 s: 136 * 100 cs / 256 = 53.1 cs; 3 s + 530 ms.
        assert_eq!(
            master_down_interval(Version::V3, 120, centis(100)),
            Duration::from_millis(3530)
        );
        // v3, priority 100, 50 cs: 156 * 50 / 256 = 30.5 cs; 1.5 s + 300 ms.
        assert_eq!(
            master_down_interval(Version::V3, 100, centis(50)),
            Duration::from_millis(1800)
        );
        // Priority 255 (the address owner): 1 / 256 of an interval, under a centisecond.
        assert_eq!(skew_time(Version::V3, 255, centis(100)), Duration::ZERO);
    }
}
