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
        // (version, priority, interval in cs, Skew_Time and Master_Down_Interval in ms, worked
        // by hand).
        let cases = [
            // v2, priority 100: 156 / 256 s = 609.4 ms, 600 ms in whole centiseconds, whatever
            // the interval.
            (Version::V2, 100, 100, 600, 3600),
            (Version::V2, 100, 300, 600, 9600),
            // v3, priority 120, 1 s: 136 * 100 cs / 256 = 53.1 cs; 3 s + 530 ms.
            (Version::V3, 120, 100, 530, 3530),
            // v3, priority 100, 50 cs: 156 * 50 / 256 = 30.5 cs; 1.5 s + 300 ms.
            (Version::V3, 100, 50, 300, 1800),
            // Priority 255 (the address owner): 1 / 256 of an interval, under a centisecond.
            (Version::V3, 255, 100, 0, 3000),
        ];
        for (version, priority, cs, skew, down) in cases {
            let case = format!("{version:?} priority {priority} at {cs} cs");
            let ms = |d: Duration| d.as_millis();
            assert_eq!(ms(skew_time(version, priority, centis(cs))), skew, "{case}");
            assert_eq!(
                ms(master_down_interval(version, priority, centis(cs))),
                down,
                "{case}"
            );
        }
    }
}
