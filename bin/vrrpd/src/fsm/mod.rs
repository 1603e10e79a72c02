//! The VRRP router as a sans-IO state machine: events and the current time in, actions out.
//!
//! - [`Instance`]: one virtual router, RFC 5798 6.4 / RFC 3768 6.4 written as the RFC's state
//!   table, plus keepalived's Fault state, track scripts and interfaces, preempt delay and GARP
//!   schedule.
//! - [`SyncGroup`]: instances that change state together (keepalived's `vrrp_sync_group`).
//! - [`track`]: rise/fall counting and the effective priority.
//! - [`clock`]: virtual time in milliseconds, Skew_Time and Master_Down_Interval.
//! - [`sim`]: a simulated LAN that wires instances together on the virtual clock, for tests.
//!
//! The core never reads a clock or touches a socket. The IO shell validates received adverts
//! (TTL, authentication, checksum, VRID, addresses) before handing them in as
//! [`Event::Advert`], runs the track scripts and reports their results, watches links, and
//! carries out the [`Action`]s: send adverts, add and remove addresses, send gratuitous ARP /
//! unsolicited NA bursts, run notify scripts and write state files. It calls
//! [`Instance::handle_timeout`] when [`Instance::poll_timeout`] says.
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use vrrpd::fsm::{Action, Event, Instance, InstanceParams, Instant, State};
//!
//! let me = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
//! let mut vr = Instance::new(InstanceParams::new(51, 100, me))?;
//! vr.handle(Instant::ZERO, Event::Startup);
//! assert_eq!(vr.state(), State::Backup);
//! // v2, 1 s interval, priority 100: Master_Down_Interval = 3 s + 609 ms.
//! let due = vr.poll_timeout().unwrap();
//! assert_eq!(due, Instant::from_millis(3609));
//! let actions = vr.handle_timeout(due);
//! assert!(actions.contains(&Action::AddVips));
//! assert_eq!(vr.state(), State::Master);
//! # Ok::<(), vrrpd::fsm::ParamsError>(())
//! ```

pub mod clock;
mod instance;
mod params;
pub mod sim;
mod sync;
pub mod track;

pub use clock::{master_down_interval, skew_time, Duration, Instant};
pub use instance::{Action, Counters, Event, Instance, State};
pub use params::{
    GarpParams, InitialState, InstanceParams, ParamsError, TrackFile, TrackInterface, TrackScript,
    Version,
};
pub use sync::SyncGroup;
pub use track::ScriptStatus;
