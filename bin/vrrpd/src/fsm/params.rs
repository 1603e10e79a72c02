//! What one VRRP instance is configured with: a plain struct, independent of keepalived.conf (the
//! glue from the config model to this comes later).

use std::collections::BTreeSet;
use std::net::IpAddr;

use thiserror::Error;

/// The protocol version: the codec's own type, so that adverts and instances agree on it.
pub use ipi_core::vrrp::Version;

/// The state keepalived's `state MASTER|BACKUP` asks for.
///
/// Only the address owner acts on it: keepalived 2.x starts every instance below priority 255
/// as Backup with a normal Master_Down_Timer, whatever `state` says, and an owner configured
/// `state BACKUP` too. [`InstanceParams::new`] derives it from the priority, as keepalived
/// does when `state` is absent, so by default the owner starts as Master (RFC 5798 6.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InitialState {
    /// `state MASTER`.
    Master,
    /// `state BACKUP`.
    Backup,
}

/// A track script as one instance uses it (keepalived's `vrrp_script` plus the instance's
/// `track_script` weight).
///
/// The IO shell runs the script every `interval` and reports each exit as
/// [`Event::ScriptResult`](super::Event::ScriptResult); a timeout is reported as a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackScript {
    /// The script's name, as results are reported.
    pub name: String,
    /// Added to the priority while the script is OK (positive weight) or while it is failing
    /// (negative weight); 0 puts the instance in Fault while it is failing. -253..=253, as
    /// keepalived accepts.
    pub weight: i32,
    /// Consecutive successes needed to become OK (at least 1).
    pub rise: u32,
    /// Consecutive failures needed to become failing (at least 1).
    pub fall: u32,
    /// keepalived's `init_fail`: start as failing instead of waiting for the first result.
    pub init_fail: bool,
}

impl TrackScript {
    /// A script with keepalived's defaults: rise 1, fall 1, no `init_fail`.
    pub fn new(name: impl Into<String>, weight: i32) -> Self {
        TrackScript {
            name: name.into(),
            weight,
            rise: 1,
            fall: 1,
            init_fail: false,
        }
    }
}

/// A tracked interface (keepalived's `track_interface`). The instance's own interface belongs in
/// this list too, with weight 0, if its loss should put the instance in Fault (keepalived does
/// that implicitly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackInterface {
    /// The interface's name, as [`Event::InterfaceChanged`](super::Event::InterfaceChanged)
    /// reports it.
    pub name: String,
    /// Added to the priority while the interface is up (positive) or down (negative); 0 puts the
    /// instance in Fault while it is down. -253..=253.
    pub weight: i32,
}

impl TrackInterface {
    /// A tracked interface.
    pub fn new(name: impl Into<String>, weight: i32) -> Self {
        TrackInterface {
            name: name.into(),
            weight,
        }
    }
}

/// A tracked file (keepalived's `track_file`): the integer it holds, times the weight, moves the
/// priority. The IO shell reports each value read as
/// [`Event::FileValue`](super::Event::FileValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackFile {
    /// The `track_file` block's name, as values are reported.
    pub name: String,
    /// The value times this is added to the priority; at -254 or below the instance is in
    /// Fault. 0: any value but 0 puts it in Fault.
    pub weight: i32,
}

/// When a new master announces itself with gratuitous ARP (IPv4) or unsolicited neighbour
/// advertisements (IPv6). keepalived's keywords and defaults; the core emits each burst as a
/// timed [`Action::SendGarp`](super::Action::SendGarp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GarpParams {
    /// `garp_master_delay`: a second burst this long after becoming master; 0 = none.
    /// Default 5 s.
    pub master_delay_cs: u32,
    /// `garp_master_repeat`: messages per VIP in each burst. Default 5.
    pub master_repeat: u32,
    /// `garp_master_refresh`: while master, a burst this often; 0 = never (the default).
    pub master_refresh_cs: u32,
    /// `garp_master_refresh_repeat`: messages per VIP in each refresh. Default 1.
    pub master_refresh_repeat: u32,
    /// `garp_lower_prio_repeat`: messages per VIP in the burst a master sends when it hears a
    /// lower-priority advert (a split brain healing); 0 = none. keepalived's default is the
    /// global `vrrp_garp_master_repeat` (5).
    pub lower_prio_repeat: u32,
    /// `garp_lower_prio_delay`: a second such burst this long after the first; 0 = none.
    /// keepalived's default is the global `vrrp_garp_master_delay` (5 s).
    pub lower_prio_delay_cs: u32,
}

impl Default for GarpParams {
    fn default() -> Self {
        GarpParams {
            master_delay_cs: 500,
            master_repeat: 5,
            master_refresh_cs: 0,
            master_refresh_repeat: 1,
            lower_prio_repeat: 5,
            lower_prio_delay_cs: 500,
        }
    }
}

/// One VRRP instance's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceParams {
    /// The virtual router id, 1..=255.
    pub vrid: u8,
    /// The protocol version.
    pub version: Version,
    /// The configured (base) priority, 1..=255; 255 means this router owns the addresses.
    pub priority: u8,
    /// Advertisement_Interval in centiseconds: 1..=4095 for v3, whole seconds (a multiple of
    /// 100, up to 255 s) for v2.
    pub advert_int_cs: u16,
    /// Preempt_Mode (keepalived: `nopreempt` clears it).
    pub preempt: bool,
    /// keepalived's `preempt_delay`, in centiseconds; 0 = none.
    pub preempt_delay_cs: u32,
    /// keepalived's `state`.
    pub initial_state: InitialState,
    /// The primary address adverts are sent from: the tie-breaker between equal priorities
    /// (RFC 5798 6.4.3).
    pub primary_address: IpAddr,
    /// Track scripts.
    pub track_scripts: Vec<TrackScript>,
    /// Tracked interfaces.
    pub track_interfaces: Vec<TrackInterface>,
    /// Tracked files.
    pub track_files: Vec<TrackFile>,
    /// Gratuitous ARP / unsolicited NA schedule.
    pub garp: GarpParams,
    /// keepalived's `lower_prio_no_advert`. By default (false) a master that hears a
    /// lower-priority advert answers with one of its own at once, so a lower-priority router
    /// that believes it is master (after a partition) steps down at once instead of at our next
    /// scheduled advert; RFC 5798 6.4.3 only discards it, which is what true selects.
    pub lower_prio_no_advert: bool,
    /// vrrpd's `preempt_on_lower_priority` (off by default, as in keepalived): a preempting
    /// Backup that hears the master advertise a priority below its own (but above 0) sets its
    /// Master_Down_Timer to Skew_Time, as for priority 0, instead of discarding the advert and
    /// waiting for Master_Down_Interval (RFC 5798 6.4.2). A master whose track script fails then
    /// loses its addresses within Skew_Time of its next advert.
    pub preempt_on_lower_priority: bool,
}

impl InstanceParams {
    /// Parameters with keepalived's defaults: version 3 for IPv6 and 2 for IPv4 (keepalived's
    /// `vrrp_version` default), a 1 s interval, preemption without delay, `state` derived from
    /// the priority, no tracking, default GARP.
    pub fn new(vrid: u8, priority: u8, primary_address: IpAddr) -> Self {
        InstanceParams {
            vrid,
            version: if primary_address.is_ipv6() {
                Version::V3
            } else {
                Version::V2
            },
            priority,
            advert_int_cs: 100,
            preempt: true,
            preempt_delay_cs: 0,
            initial_state: if priority == 255 {
                InitialState::Master
            } else {
                InitialState::Backup
            },
            primary_address,
            track_scripts: Vec::new(),
            track_interfaces: Vec::new(),
            track_files: Vec::new(),
            garp: GarpParams::default(),
            lower_prio_no_advert: false,
            preempt_on_lower_priority: false,
        }
    }

    /// Whether this router owns the virtual addresses (priority 255, RFC 5798 6.1).
    pub fn is_owner(&self) -> bool {
        self.priority == 255
    }

    /// Checks every field; [`Instance::new`](super::Instance::new) refuses what this refuses.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if self.vrid == 0 {
            return Err(ParamsError::Vrid);
        }
        if self.priority == 0 {
            return Err(ParamsError::Priority);
        }
        let interval_ok = match self.version {
            // RFC 5798 5.2.7: 12 bits of centiseconds, and 0 would advertise continuously.
            Version::V3 => (1..=4095).contains(&self.advert_int_cs),
            // RFC 3768 5.3.7: 8 bits of whole seconds.
            Version::V2 => {
                self.advert_int_cs % 100 == 0 && (100..=25_500).contains(&self.advert_int_cs)
            }
        };
        if !interval_ok {
            return Err(ParamsError::AdvertInterval {
                version: self.version,
                cs: self.advert_int_cs,
            });
        }
        if self.version == Version::V2 && self.primary_address.is_ipv6() {
            return Err(ParamsError::V2Ipv6);
        }
        let mut scripts = BTreeSet::new();
        for s in &self.track_scripts {
            check_weight(&s.name, s.weight)?;
            if s.rise == 0 || s.fall == 0 {
                return Err(ParamsError::RiseFall {
                    name: s.name.clone(),
                    rise: s.rise,
                    fall: s.fall,
                });
            }
            if !scripts.insert(s.name.as_str()) {
                return Err(ParamsError::Duplicate(s.name.clone()));
            }
        }
        let mut interfaces = BTreeSet::new();
        for i in &self.track_interfaces {
            check_weight(&i.name, i.weight)?;
            if !interfaces.insert(i.name.as_str()) {
                return Err(ParamsError::Duplicate(i.name.clone()));
            }
        }
        Ok(())
    }
}

fn check_weight(name: &str, weight: i32) -> Result<(), ParamsError> {
    if (-253..=253).contains(&weight) {
        Ok(())
    } else {
        Err(ParamsError::Weight {
            name: name.to_owned(),
            weight,
        })
    }
}

/// Parameters an instance cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParamsError {
    /// VRID 0.
    #[error("virtual router id 0 is not valid: it must be 1..=255")]
    Vrid,
    /// Priority 0.
    #[error("priority 0 is not valid: it must be 1..=255 (0 only signals a master that resigns)")]
    Priority,
    /// An interval the version cannot carry.
    #[error(
        "advertisement interval {cs} cs is not valid for {version}: it must be 1..=4095 cs \
         for VRRPv3, or whole seconds 1..=255 (100..=25500 cs) for VRRPv2"
    )]
    AdvertInterval {
        /// The version.
        version: Version,
        /// The interval in centiseconds.
        cs: u16,
    },
    /// VRRPv2 with an IPv6 address.
    #[error("VRRPv2 carries IPv4 only: use version 3 for an IPv6 primary address")]
    V2Ipv6,
    /// A weight outside -253..=253.
    #[error("weight {weight} of `{name}` is out of range: it must be -253..=253")]
    Weight {
        /// The script or interface.
        name: String,
        /// Its weight.
        weight: i32,
    },
    /// A rise or fall of 0.
    #[error("track script `{name}`: rise {rise} and fall {fall} must both be at least 1")]
    RiseFall {
        /// The script.
        name: String,
        /// Its rise.
        rise: u32,
        /// Its fall.
        fall: u32,
    },
    /// A script or interface tracked twice.
    #[error("`{0}` is tracked twice: list each script and each interface once")]
    Duplicate(String),
}
