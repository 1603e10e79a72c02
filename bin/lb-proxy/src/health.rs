//! Health checks as a sans-IO core: haproxy's counter semantics as plain data ([`Health`]),
//! results and time in, verdicts and the next check's delay out. The probes that feed it (TCP
//! connect, TLS, an HTTP(S) request as `option httpchk`, `tcp-check` rules) do the IO in
//! [`crate::daemon::probe`].
//!
//! The counter runs from 0 to `rise + fall - 1`; a server is UP while it is at least `rise`.
//! A failure takes one off, and a server that drops below `rise` goes straight to 0 (DOWN); a
//! success adds one, and a server that reaches `rise` goes straight to the top (UP). So a
//! server that starts UP at `rise` (haproxy's default) falls at its first failure, while one
//! that has been UP for a while takes `fall` failures in a row.
//!
//! [`Passive`] is the health that client traffic gives (haproxy's `observe layer4`,
//! `error-limit`, `on-error`, and lb-proxy's connect races): it acts on the same counter.

use std::time::Duration;

use crate::config::model::{InitState, OnError};

/// A server's health counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    value: u32,
    rise: u32,
    fall: u32,
    up: bool,
}

/// What a check result did to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing the rest of the proxy needs to know.
    None,
    /// The server is UP now.
    Up,
    /// The server is DOWN now.
    Down,
}

impl Health {
    /// A counter for `rise` and `fall` (at least 1 each), starting as `init` says.
    pub fn new(rise: u32, fall: u32, init: InitState) -> Health {
        let (rise, fall) = (rise.max(1), fall.max(1));
        let (value, up) = match init {
            InitState::FullyUp => (rise + fall - 1, true),
            InitState::Up => (rise, true),
            InitState::Down => (rise - 1, false),
            InitState::FullyDown => (0, false),
        };
        Health {
            value,
            rise,
            fall,
            up,
        }
    }

    /// UP or not.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// The counter (for the stats).
    pub fn value(&self) -> u32 {
        self.value
    }

    fn top(&self) -> u32 {
        self.rise + self.fall - 1
    }

    /// Steady: fully UP, or fully DOWN.
    pub fn steady(&self) -> bool {
        (self.up && self.value == self.top()) || (!self.up && self.value == 0)
    }

    /// Applies one check result.
    pub fn record(&mut self, passed: bool) -> Change {
        if passed {
            if self.value < self.top() {
                self.value += 1;
                if self.value >= self.rise {
                    self.value = self.top();
                }
            }
            if !self.up && self.value >= self.rise {
                self.up = true;
                return Change::Up;
            }
        } else {
            if self.value > 0 {
                self.value -= 1;
                if self.value < self.rise {
                    self.value = 0;
                }
            }
            if self.up && self.value < self.rise {
                self.up = false;
                return Change::Down;
            }
        }
        Change::None
    }

    /// haproxy's `on-error` (`__health_adjust` in check.c): `sudden-death` leaves a server
    /// fully UP one failure from the edge, `mark-down` puts it at the edge; then both, and
    /// `fail-check`, count one failed check. `fastinter` changes nothing here (the caller
    /// checks sooner, as after every action).
    pub fn on_error(&mut self, action: OnError) -> Change {
        match action {
            OnError::FastInter => return Change::None,
            OnError::SuddenDeath if self.value > self.rise => self.value = self.rise + 1,
            OnError::SuddenDeath | OnError::FailCheck => {}
            OnError::MarkDown => self.value = self.rise,
        }
        self.record(false)
    }

    /// The time to the next check: `inter` while steady UP, `downinter` while steady DOWN,
    /// `fastinter` in between (haproxy's choice; the latter two default to `inter`).
    pub fn interval(
        &self,
        inter: Duration,
        fast: Option<Duration>,
        down: Option<Duration>,
    ) -> Duration {
        if self.up && self.value == self.top() {
            inter
        } else if !self.up && self.value == 0 {
            down.unwrap_or(inter)
        } else {
            fast.unwrap_or(inter)
        }
    }
}

/// What client traffic tells about a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A connection was set up (haproxy's `HANA_STATUS_L4_OK`).
    Connected,
    /// A connection attempt failed: refused, unreachable or timed out (`HANA_STATUS_L4_ERR`).
    ConnectFailed,
    /// A connection attempt was still waiting when a raced attempt to another server
    /// connected.
    RaceLost,
}

/// Why passive health acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `error-limit` consecutive connection errors (`observe layer4`).
    Errors(u32),
    /// `losses` connect races lost in a row.
    RacesLost(u32),
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Errors(n) => write!(f, "{n} consecutive connection error(s) (observe layer4)"),
            Reason::RacesLost(n) => write!(f, "{n} connect race(s) lost in a row"),
        }
    }
}

/// What passive health decided after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// What it did to the counter.
    pub change: Change,
    /// Why it acted (None: it did not).
    pub reason: Option<Reason>,
}

impl Verdict {
    const NOTHING: Verdict = Verdict {
        change: Change::None,
        reason: None,
    };
}

/// The passive side of a server's health: its settings and its counts of consecutive errors
/// and lost races.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Passive {
    /// `observe layer4`.
    pub observe: bool,
    /// `error-limit`.
    pub error_limit: u32,
    /// `on-error`.
    pub on_error: OnError,
    /// Races lost in a row that mark the server DOWN (0: never).
    pub race_losses: u32,
    errors: u32,
    lost: u32,
}

impl Passive {
    /// Passive health with these settings and nothing counted.
    pub fn new(observe: bool, error_limit: u32, on_error: OnError, race_losses: u32) -> Passive {
        Passive {
            observe,
            error_limit: error_limit.max(1),
            on_error,
            race_losses,
            errors: 0,
            lost: 0,
        }
    }

    /// A check passed: haproxy forgets the consecutive errors then.
    pub fn check_passed(&mut self) {
        self.errors = 0;
        self.lost = 0;
    }

    /// Applies `event` to `health`. Only a server that is UP is judged: one already DOWN is
    /// left to its checks.
    pub fn observe(&mut self, event: Event, health: &mut Health) -> Verdict {
        if !health.is_up() {
            return Verdict::NOTHING;
        }
        match event {
            Event::Connected => {
                self.errors = 0;
                self.lost = 0;
                Verdict::NOTHING
            }
            Event::ConnectFailed if self.observe => {
                self.errors += 1;
                if self.errors < self.error_limit {
                    return Verdict::NOTHING;
                }
                let reason = Some(Reason::Errors(self.errors));
                self.errors = 0;
                Verdict {
                    change: health.on_error(self.on_error),
                    reason,
                }
            }
            Event::ConnectFailed => Verdict::NOTHING,
            Event::RaceLost => {
                self.lost += 1;
                if self.race_losses == 0 || self.lost < self.race_losses {
                    return Verdict::NOTHING;
                }
                let reason = Some(Reason::RacesLost(self.lost));
                self.lost = 0;
                Verdict {
                    change: health.on_error(OnError::MarkDown),
                    reason,
                }
            }
        }
    }
}

/// `interval` moved by up to `percent` % either way (haproxy's `spread-checks`): `random` is
/// uniform over u32, 0 moves it earliest, u32::MAX latest.
pub fn spread(interval: Duration, percent: u32, random: u32) -> Duration {
    if percent == 0 {
        return interval;
    }
    let micros = interval.as_micros();
    let reach = micros * u128::from(percent.min(50)) / 100;
    // micros - reach + 2 * reach * random / u32::MAX, in integers.
    let moved = micros - reach + 2 * reach * u128::from(random) / u128::from(u32::MAX);
    Duration::from_micros(u64::try_from(moved).unwrap_or(u64::MAX))
}

/// When the first check of server `index` of `count` runs: spread evenly over one interval,
/// as haproxy does, so that checks do not all go at once.
pub fn first_delay(index: usize, count: usize, inter: Duration) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    inter.mul_f64(index as f64 / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(h: &mut Health, results: &str) -> String {
        results
            .chars()
            .map(|c| match h.record(c == '+') {
                Change::Up => 'U',
                Change::Down => 'D',
                Change::None => '.',
            })
            .collect()
    }

    #[test]
    fn a_server_that_starts_up_falls_at_its_first_failure() {
        let mut h = Health::new(3, 2, InitState::Up);
        assert!(h.is_up());
        assert_eq!(run(&mut h, "-"), "D");
        assert_eq!(run(&mut h, "++-+++"), ".....U");
    }

    #[test]
    fn once_fully_up_it_takes_fall_failures_in_a_row() {
        let mut h = Health::new(3, 2, InitState::Up);
        assert_eq!(run(&mut h, "+"), ".");
        assert!(h.steady());
        // A success between failures starts the count over: this failure is the second in
        // a row.
        assert_eq!(run(&mut h, "-+-"), "...");
        assert_eq!(run(&mut h, "-"), "D");
        // Down: rise successes in a row bring it back; a failure on the way starts over.
        assert_eq!(run(&mut h, "++-+++"), ".....U");
        assert_eq!(h.value(), 4);
    }

    #[test]
    fn init_states() {
        let mut h = Health::new(3, 2, InitState::FullyUp);
        assert_eq!(run(&mut h, "--"), ".D");
        let mut h = Health::new(3, 2, InitState::Down);
        assert!(!h.is_up());
        assert_eq!(run(&mut h, "+"), "U");
        let mut h = Health::new(3, 2, InitState::FullyDown);
        assert_eq!(run(&mut h, "+++"), "..U");
        // rise 1 fall 1: every result decides.
        let mut h = Health::new(1, 1, InitState::Up);
        assert_eq!(run(&mut h, "-+-+"), "DUDU");
    }

    #[test]
    fn intervals_follow_the_state() {
        let (i, f, d) = (
            Duration::from_secs(2),
            Duration::from_millis(500),
            Duration::from_secs(5),
        );
        let mut h = Health::new(3, 2, InitState::Up);
        assert_eq!(h.interval(i, Some(f), Some(d)), f, "UP but not fully");
        h.record(true);
        assert_eq!(h.interval(i, Some(f), Some(d)), i);
        h.record(false);
        assert_eq!(h.interval(i, Some(f), Some(d)), f);
        h.record(false);
        assert_eq!(h.interval(i, Some(f), Some(d)), d, "fully DOWN");
        h.record(true);
        assert_eq!(h.interval(i, Some(f), Some(d)), f);
        assert_eq!(h.interval(i, None, None), i);
    }

    #[test]
    fn on_error_moves_the_counter_as_haproxy() {
        // rise 2 fall 3: the counter runs 0..=4, UP from 2.
        let fully_up = || Health::new(2, 3, InitState::FullyUp);
        let mut h = fully_up();
        assert_eq!(h.on_error(OnError::FastInter), Change::None);
        assert_eq!(h.value(), 4);
        assert_eq!(h.on_error(OnError::FailCheck), Change::None);
        assert_eq!(h.value(), 3, "one failed check");
        let mut h = fully_up();
        assert_eq!(h.on_error(OnError::SuddenDeath), Change::None);
        assert_eq!(h.value(), 2, "one more failure takes it DOWN");
        assert_eq!(h.record(false), Change::Down);
        let mut h = fully_up();
        assert_eq!(h.on_error(OnError::MarkDown), Change::Down);
        assert_eq!(h.value(), 0);
        assert_eq!(run(&mut h, "++"), ".U", "back after rise checks");
        // sudden-death on a server already at the edge: as a failed check, DOWN.
        let mut h = Health::new(2, 3, InitState::Up);
        assert_eq!(h.on_error(OnError::SuddenDeath), Change::Down);
    }

    fn passive(observe: bool, limit: u32, on_error: OnError, races: u32) -> Passive {
        Passive::new(observe, limit, on_error, races)
    }

    /// Feeds events (`c` connected, `e` error, `l` race lost, `+`/`-` a check) and writes
    /// what happened: `D` DOWN, `U` UP, `a` an action without a change, `.` nothing.
    fn feed(p: &mut Passive, h: &mut Health, events: &str) -> String {
        events
            .chars()
            .map(|c| {
                let v = match c {
                    '+' | '-' => {
                        if c == '+' {
                            p.check_passed();
                        }
                        return match h.record(c == '+') {
                            Change::Up => 'U',
                            Change::Down => 'D',
                            Change::None => '.',
                        };
                    }
                    'c' => p.observe(Event::Connected, h),
                    'e' => p.observe(Event::ConnectFailed, h),
                    _ => p.observe(Event::RaceLost, h),
                };
                match (v.change, v.reason) {
                    (Change::Down, _) => 'D',
                    (Change::Up, _) => 'U',
                    (Change::None, Some(_)) => 'a',
                    (Change::None, None) => '.',
                }
            })
            .collect()
    }

    #[test]
    fn observe_layer4_acts_after_error_limit_consecutive_errors() {
        let mut h = Health::new(2, 3, InitState::FullyUp);
        let mut p = passive(true, 3, OnError::MarkDown, 0);
        // A connection in between starts the count over; a check that passes too.
        assert_eq!(feed(&mut p, &mut h, "eecee+ee"), "........");
        assert_eq!(feed(&mut p, &mut h, "e"), "D");
        // DOWN: traffic no longer judges it (there is none, but a late error must not count).
        assert_eq!(feed(&mut p, &mut h, "eeelll"), "......");
        assert_eq!(feed(&mut p, &mut h, "++"), ".U");

        // fail-check with error-limit 1: each error is a failed check; fall 3 from the top.
        let mut h = Health::new(2, 3, InitState::FullyUp);
        let mut p = passive(true, 1, OnError::FailCheck, 0);
        assert_eq!(feed(&mut p, &mut h, "eee"), "aaD");
        // fastinter: acts, never changes the counter.
        let mut h = Health::new(2, 3, InitState::FullyUp);
        let mut p = passive(true, 1, OnError::FastInter, 0);
        assert_eq!(feed(&mut p, &mut h, "eee"), "aaa");
        assert!(h.is_up() && h.steady());
        // Without observe, errors are only counted by the caller.
        let mut h = Health::new(2, 3, InitState::FullyUp);
        let mut p = passive(false, 1, OnError::MarkDown, 0);
        assert_eq!(feed(&mut p, &mut h, "eeee"), "....");
    }

    #[test]
    fn a_server_that_loses_races_in_a_row_is_marked_down() {
        let mut h = Health::new(3, 2, InitState::FullyUp);
        let mut p = passive(false, 10, OnError::FailCheck, 3);
        // A connection that succeeds in between forgives the losses.
        assert_eq!(feed(&mut p, &mut h, "llcll"), ".....");
        assert_eq!(feed(&mut p, &mut h, "l"), "D");
        // Its checks bring it back, after rise of them.
        assert_eq!(feed(&mut p, &mut h, "-++l+"), "....U");
        // 0: races never mark a server DOWN.
        let mut h = Health::new(3, 2, InitState::FullyUp);
        let mut p = passive(true, 10, OnError::FailCheck, 0);
        assert_eq!(feed(&mut p, &mut h, "llllll"), "......");
    }

    /// A virtual clock: when the checks run after passive health marks a dead server DOWN,
    /// and when it is taken back.
    #[test]
    fn after_a_passive_mark_down_the_checks_decide_when_it_returns() {
        let (inter, fast, down) = (
            Duration::from_secs(1),
            Some(Duration::from_millis(200)),
            Some(Duration::from_secs(3)),
        );
        let mut h = Health::new(3, 2, InitState::FullyUp);
        let mut p = passive(true, 1, OnError::MarkDown, 3);
        let mut now = Duration::ZERO;
        // The server dies at 0.3 s: the first refused connection marks it DOWN at once,
        // where its checks (fall 2, inter 1 s) would have taken until 2 s.
        now += Duration::from_millis(300);
        assert_eq!(feed(&mut p, &mut h, "e"), "D");
        let down_at = now;
        // Checks fail while it is dead, at downinter once fully DOWN.
        assert_eq!(h.interval(inter, fast, down), down.unwrap());
        for _ in 0..3 {
            now += h.interval(inter, fast, down);
            assert_eq!(feed(&mut p, &mut h, "-"), ".");
        }
        // Back at 9.3 s: rise 3 checks, fastinter apart after the first.
        let mut back = "";
        while !h.is_up() {
            now += h.interval(inter, fast, down);
            back = if feed(&mut p, &mut h, "+") == "U" {
                "U"
            } else {
                ""
            };
        }
        assert_eq!(back, "U");
        assert_eq!(down_at, Duration::from_millis(300));
        assert_eq!(now, Duration::from_millis(300 + 9_000 + 3_000 + 200 + 200));
    }

    #[test]
    fn first_checks_are_spread_over_an_interval() {
        let inter = Duration::from_secs(1);
        let d: Vec<_> = (0..4)
            .map(|i| first_delay(i, 4, inter).as_millis())
            .collect();
        assert_eq!(d, [0, 250, 500, 750]);
    }

    #[test]
    fn spread_checks_move_the_interval_by_up_to_the_percentage() {
        let s = Duration::from_secs(2);
        assert_eq!(spread(s, 0, 7), s);
        assert_eq!(spread(s, 10, 0), Duration::from_millis(1800));
        assert_eq!(spread(s, 10, u32::MAX), Duration::from_millis(2200));
        assert_eq!(
            spread(s, 10, u32::MAX / 2),
            Duration::from_micros(1_999_999)
        );
        assert_eq!(spread(s, 80, 0), Duration::from_secs(1), "at most 50 %");
    }
}
