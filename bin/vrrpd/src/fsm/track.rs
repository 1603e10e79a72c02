//! Track scripts and tracked interfaces, and the effective priority and Fault they give an
//! instance. keepalived's semantics (vrrp_track.c, vrrp_scheduler.c), which the RFCs leave to the
//! implementation.

use super::params::InstanceParams;

/// Where a track script stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptStatus {
    /// No result yet. A weighted script adds nothing in either direction; a weight-0 script
    /// holds its instance in Initialize (keepalived's `num_script_init`) until the first result.
    Init,
    /// Succeeding: `rise` consecutive successes, or the first success after Init.
    Ok,
    /// Failing: `fall` consecutive failures, the first failure after Init, or `init_fail`.
    Failing,
}

/// keepalived's result counter for one script (vrrp_script_child_thread).
///
/// `result` runs over 0..=rise+fall-1 and the script is OK while it is at least `rise`. A
/// success climbs by one while below `rise - 1` and otherwise jumps to the top; a failure
/// descends by one while above `rise` and otherwise drops to 0. So `rise` successes in a row
/// turn a failing script OK, `fall` failures in a row turn an OK script failing, and one
/// result of the other kind restarts the count.
///
/// The start is keepalived's too: `rise - 1` ("one success is enough"), not yet counting as
/// either state, so the first result decides; with `init_fail`, 0 and failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCounter {
    rise: u32,
    fall: u32,
    result: u32,
    status: ScriptStatus,
}

impl ScriptCounter {
    /// A counter for a script with this `rise` and `fall` (0 is read as 1).
    pub fn new(rise: u32, fall: u32, init_fail: bool) -> Self {
        let rise = rise.max(1);
        let fall = fall.max(1);
        if init_fail {
            ScriptCounter {
                rise,
                fall,
                result: 0,
                status: ScriptStatus::Failing,
            }
        } else {
            ScriptCounter {
                rise,
                fall,
                result: rise - 1,
                status: ScriptStatus::Init,
            }
        }
    }

    /// Counts one result (a timeout is a failure); returns whether the status changed.
    pub fn record(&mut self, ok: bool) -> bool {
        let before = self.status;
        if ok {
            if self.result < self.rise - 1 {
                self.result += 1;
            } else {
                self.result = self.rise + self.fall - 1;
                self.status = ScriptStatus::Ok;
            }
        } else if self.result > self.rise {
            self.result -= 1;
        } else {
            self.result = 0;
            self.status = ScriptStatus::Failing;
        }
        self.status != before
    }

    /// The current status.
    pub fn status(&self) -> ScriptStatus {
        self.status
    }
}

#[derive(Debug, Clone)]
struct Script {
    name: String,
    weight: i32,
    counter: ScriptCounter,
}

#[derive(Debug, Clone)]
struct Interface {
    name: String,
    weight: i32,
    up: bool,
}

#[derive(Debug, Clone)]
struct File {
    name: String,
    weight: i32,
    value: i64,
}

/// A tracked file's value at or below this (after its weight) puts the instance in Fault
/// (keepalived's track_file.c).
const FILE_FAULT: i64 = -254;

impl File {
    /// keepalived's `process_update_vrrp_track_file_status`: the value times the weight,
    /// within -254..=253, -254 meaning Fault; with weight 0, any value but 0 is Fault.
    fn status(&self) -> i64 {
        if self.weight == 0 {
            return if self.value == 0 { 0 } else { FILE_FAULT };
        }
        self.value
            .saturating_mul(i64::from(self.weight))
            .clamp(FILE_FAULT, 253)
    }
}

/// Everything an instance tracks, and what it adds up to.
#[derive(Debug, Clone)]
pub struct Tracking {
    base: u8,
    scripts: Vec<Script>,
    interfaces: Vec<Interface>,
    files: Vec<File>,
}

impl Tracking {
    /// The tracking `params` configure. Interfaces start up: the IO shell reports the ones that
    /// are down before it starts the instance.
    pub fn new(params: &InstanceParams) -> Self {
        Tracking {
            base: params.priority,
            scripts: params
                .track_scripts
                .iter()
                .map(|s| Script {
                    name: s.name.clone(),
                    weight: s.weight,
                    counter: ScriptCounter::new(s.rise, s.fall, s.init_fail),
                })
                .collect(),
            interfaces: params
                .track_interfaces
                .iter()
                .map(|i| Interface {
                    name: i.name.clone(),
                    weight: i.weight,
                    up: true,
                })
                .collect(),
            files: params
                .track_files
                .iter()
                .map(|f| File {
                    name: f.name.clone(),
                    weight: f.weight,
                    value: 0,
                })
                .collect(),
        }
    }

    /// Records the value read from file `name`; returns whether that changed anything.
    pub fn file_value(&mut self, name: &str, value: i64) -> bool {
        let mut changed = false;
        for f in self.files.iter_mut().filter(|f| f.name == name) {
            changed |= f.value != value;
            f.value = value;
        }
        changed
    }

    /// The last value of file `name`, if tracked.
    pub fn file(&self, name: &str) -> Option<i64> {
        self.files.iter().find(|f| f.name == name).map(|f| f.value)
    }

    /// Counts a result of script `name`; returns whether its status changed. Unknown names are
    /// ignored: the shell may run scripts other instances track.
    pub fn script_result(&mut self, name: &str, ok: bool) -> bool {
        let mut changed = false;
        for s in self.scripts.iter_mut().filter(|s| s.name == name) {
            changed |= s.counter.record(ok);
        }
        changed
    }

    /// Records that interface `name` went up or down; returns whether that changed anything.
    pub fn interface_changed(&mut self, name: &str, up: bool) -> bool {
        let mut changed = false;
        for i in self.interfaces.iter_mut().filter(|i| i.name == name) {
            changed |= i.up != up;
            i.up = up;
        }
        changed
    }

    /// The effective priority (keepalived's `vrrp_set_effective_priority`): the base plus the
    /// weight of every OK script with a positive weight, of every failing script with a negative
    /// one, and the same for interfaces up / down, clamped to 1..=254 so that tracking can
    /// neither make a router the address owner nor make it send the priority 0 that means
    /// "resigning". The owner's 255 never changes: RFC 5798 6.1 makes 255 mean owning the
    /// addresses, which no check result changes.
    pub fn effective_priority(&self) -> u8 {
        if self.base == 255 {
            return 255;
        }
        let mut total = i64::from(self.base);
        for s in &self.scripts {
            match s.counter.status() {
                ScriptStatus::Ok if s.weight > 0 => total += i64::from(s.weight),
                ScriptStatus::Failing if s.weight < 0 => total += i64::from(s.weight),
                _ => {}
            }
        }
        for i in &self.interfaces {
            if (i.up && i.weight > 0) || (!i.up && i.weight < 0) {
                total += i64::from(i.weight);
            }
        }
        total += self
            .files
            .iter()
            .map(File::status)
            .filter(|&s| s > FILE_FAULT)
            .sum::<i64>();
        // The clamp keeps the value in u8's range, so the fallback is never taken.
        u8::try_from(total.clamp(1, 254)).unwrap_or(1)
    }

    /// Whether tracking puts the instance in Fault: a weight-0 script failing or a weight-0
    /// interface down (keepalived's `num_script_if_fault`). Applies to the owner too.
    pub fn in_fault(&self) -> bool {
        self.scripts
            .iter()
            .any(|s| s.weight == 0 && s.counter.status() == ScriptStatus::Failing)
            || self.interfaces.iter().any(|i| i.weight == 0 && !i.up)
            || self.files.iter().any(|f| f.status() == FILE_FAULT)
    }

    /// Whether a weight-0 script has not reported yet, which holds the instance in Initialize.
    pub fn init_pending(&self) -> bool {
        self.scripts
            .iter()
            .any(|s| s.weight == 0 && s.counter.status() == ScriptStatus::Init)
    }

    /// The status of script `name`, if tracked.
    pub fn script_status(&self, name: &str) -> Option<ScriptStatus> {
        self.scripts
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.counter.status())
    }

    /// Whether interface `name` is up, if tracked.
    pub fn interface_up(&self, name: &str) -> Option<bool> {
        self.interfaces
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScriptStatus::{Failing, Init, Ok};

    fn feed(c: &mut ScriptCounter, results: &[bool]) -> Vec<ScriptStatus> {
        results
            .iter()
            .map(|&r| {
                c.record(r);
                c.status()
            })
            .collect()
    }

    #[test]
    fn first_result_decides() {
        let mut c = ScriptCounter::new(3, 2, false);
        assert_eq!(c.status(), Init);
        assert!(c.record(true));
        assert_eq!(c.status(), Ok);

        let mut c = ScriptCounter::new(3, 2, false);
        assert!(c.record(false));
        assert_eq!(c.status(), Failing);
    }

    #[test]
    fn rise_and_fall_count_consecutive_results() {
        let mut c = ScriptCounter::new(3, 2, false);
        c.record(true);
        // fall 2: one failure is not enough, and a success in between restarts the count.
        assert_eq!(
            feed(&mut c, &[false, true, false, false]),
            [Ok, Ok, Ok, Failing]
        );
        // rise 3: a failure in between restarts the count.
        assert_eq!(
            feed(&mut c, &[true, true, false, true, true, true]),
            [Failing, Failing, Failing, Failing, Failing, Ok]
        );
    }

    #[test]
    fn init_fail_needs_rise_successes() {
        let mut c = ScriptCounter::new(2, 1, true);
        assert_eq!(c.status(), Failing);
        assert_eq!(feed(&mut c, &[true, true, false]), [Failing, Ok, Failing]);
    }

    #[test]
    fn a_file_value_times_its_weight_moves_the_priority_and_minus_254_is_fault() {
        use crate::fsm::{InstanceParams, TrackFile};
        let mut p = InstanceParams::new(1, 100, "192.0.2.1".parse().unwrap());
        p.track_files = vec![
            TrackFile {
                name: "w".into(),
                weight: -10,
            },
            TrackFile {
                name: "zero".into(),
                weight: 0,
            },
        ];
        let mut t = Tracking::new(&p);
        assert_eq!((t.effective_priority(), t.in_fault()), (100, false));
        assert!(t.file_value("w", 3));
        assert_eq!(t.effective_priority(), 70);
        assert!(!t.file_value("w", 3), "the same value changes nothing");
        t.file_value("w", -20);
        assert_eq!(t.effective_priority(), 254, "clamped as keepalived's");
        t.file_value("w", 26);
        assert!(t.in_fault(), "-260 is below -253");
        t.file_value("w", 0);
        t.file_value("zero", 7);
        assert!(t.in_fault(), "weight 0: any value but 0");
        t.file_value("zero", 0);
        assert_eq!((t.effective_priority(), t.in_fault()), (100, false));
    }

    #[test]
    fn rise_and_fall_of_one_follow_every_result() {
        let mut c = ScriptCounter::new(1, 1, false);
        assert_eq!(
            feed(&mut c, &[false, true, false, true, true]),
            [Failing, Ok, Failing, Ok, Ok]
        );
    }
}
