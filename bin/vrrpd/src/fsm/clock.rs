//! Virtual time: the instants and durations the protocol core computes with, and VRRP's timer
//! arithmetic.
//!
//! The core never reads a clock. Every call carries `now`, and `poll_timeout()` says when the IO
//! shell must call again, so a test drives the protocol with a virtual clock and asserts exact
//! instants.
//!
//! # Why milliseconds
//!
//! VRRP's unit is the centisecond (RFC 5798 5.2.7), and every configured interval here stays an
//! integer count of centiseconds. Instants and durations are counted in milliseconds because of
//! one derived value, Skew_Time = ((256 - Priority) * Master_Adver_Interval) / 256
//! (RFC 5798 6.1): it is a fraction of an interval, and truncated to whole centiseconds two
//! neighbouring priorities often get the same skew (with a 1 s interval, priority 200 and 201 both
//! give 21 cs), which is exactly the simultaneous takeover the skew exists to prevent. In
//! milliseconds they get 218 and 214. keepalived computes the same expression in microseconds;
//! FRR (and `ipi_core::vrrp::timers`) in centiseconds. Every division truncates, so results stay
//! exact integers, and truncating ours to centiseconds gives `ipi_core`'s values exactly.

use std::fmt;
use std::ops::{Add, AddAssign};

use super::params::Version;

/// A point on the virtual clock: milliseconds since an epoch the caller chooses (typically the
/// moment the daemon started). Only differences matter to the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

/// A span of virtual time in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is, or zero if it is not later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self - d`, stopping at the epoch.
    pub const fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);

    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms)
    }

    /// `cs` centiseconds, VRRP's unit.
    pub const fn from_centis(cs: u64) -> Self {
        Duration(cs.saturating_mul(10))
    }

    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s.saturating_mul(1000))
    }

    /// The length in milliseconds.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Whether this is no time at all.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self - other`, or zero if `other` is longer.
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
}

/// Saturating: the clock never wraps (u64 milliseconds last 584 million years).
impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

/// Skew_Time for a router of `priority` whose master advertises every `master_adver_int_cs`.
///
/// - v3: ((256 - Priority) * Master_Adver_Interval) / 256 (RFC 5798 6.1), so it scales with the
///   interval the master announces.
/// - v2: (256 - Priority) / 256 seconds (RFC 3768 6.1), whatever the interval; keepalived does the
///   same.
///
/// Priority 0 is never a local priority; it would give a full interval (v3) or second (v2).
pub fn skew_time(version: Version, priority: u8, master_adver_int_cs: u16) -> Duration {
    let weight = 256 - u64::from(priority);
    match version {
        Version::V2 => Duration::from_millis(weight * 1000 / 256),
        Version::V3 => Duration::from_millis(weight * u64::from(master_adver_int_cs) * 10 / 256),
    }
}

/// Master_Down_Interval: (3 * Master_Adver_Interval) + Skew_Time (RFC 5798 6.1; RFC 3768 6.1
/// with Advertisement_Interval, which v2 requires to be the same on every router).
pub fn master_down_interval(version: Version, priority: u8, master_adver_int_cs: u16) -> Duration {
    Duration::from_centis(3 * u64::from(master_adver_int_cs))
        + skew_time(version, priority, master_adver_int_cs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_separates_neighbouring_priorities() {
        // In centiseconds both would be 21; the millisecond clock keeps them apart.
        assert_eq!(skew_time(Version::V3, 200, 100), Duration::from_millis(218));
        assert_eq!(skew_time(Version::V3, 201, 100), Duration::from_millis(214));
    }

    #[test]
    fn rfc_formulas() {
        // RFC 5798 6.1 with the default priority 100 and a 1 s interval.
        assert_eq!(skew_time(Version::V3, 100, 100), Duration::from_millis(609));
        assert_eq!(
            master_down_interval(Version::V3, 100, 100),
            Duration::from_millis(3609)
        );
        // v3 skew scales with the master's interval, v2's does not (RFC 3768 6.1).
        assert_eq!(
            skew_time(Version::V3, 100, 200),
            Duration::from_millis(1218)
        );
        assert_eq!(skew_time(Version::V2, 100, 200), Duration::from_millis(609));
        assert_eq!(
            master_down_interval(Version::V2, 100, 200),
            Duration::from_millis(6609)
        );
        // The owner's skew is (almost) nothing; the extremes do not overflow.
        assert_eq!(skew_time(Version::V3, 255, 10), Duration::ZERO);
        assert_eq!(
            master_down_interval(Version::V3, 1, 4095),
            Duration::from_millis(122_850 + 40_790)
        );
    }

    #[test]
    fn agrees_with_the_centisecond_timers_of_ipi_core() {
        // The same formulas, only finer: truncating ours to centiseconds gives the codec
        // crate's values exactly.
        use ipi_core::vrrp::timers;
        for version in [Version::V2, Version::V3] {
            for priority in 1..=255u8 {
                for interval in [1u16, 7, 50, 100, 300, 4095] {
                    assert_eq!(
                        skew_time(version, priority, interval).as_millis() / 10,
                        u64::from(timers::skew_time(version, priority, interval)),
                    );
                    assert_eq!(
                        master_down_interval(version, priority, interval).as_millis() / 10,
                        u64::from(timers::master_down_interval(version, priority, interval)),
                    );
                }
            }
        }
    }

    #[test]
    fn arithmetic_saturates() {
        let far = Instant::from_millis(u64::MAX - 1);
        assert_eq!((far + Duration::from_secs(10)).as_millis(), u64::MAX);
        assert_eq!(Instant::ZERO.saturating_duration_since(far), Duration::ZERO);
        assert_eq!(Instant::from_millis(1500).to_string(), "1.500s");
    }
}
