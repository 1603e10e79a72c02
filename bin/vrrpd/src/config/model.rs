//! The keepalived.conf subset vrrpd runs, as plain data: what the parser produces, what `render`
//! writes and what the daemon runs. Defaults are keepalived's.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use ipi_core::secret::Secret;
use ipi_core::vrrp::{ah, Auth, Version};

use crate::fsm::{GarpParams, InitialState};

/// Where something was written (ipi-core's, shared by every program's file errors).
pub use ipi_core::place::Location;

/// A whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    /// `global_defs`.
    pub global: GlobalDefs,
    /// Every `vrrp_script`, in file order.
    pub scripts: Vec<VrrpScript>,
    /// Every `vrrp_instance`, in file order.
    pub instances: Vec<VrrpInstance>,
    /// Every `vrrp_sync_group`, in file order.
    pub sync_groups: Vec<SyncGroup>,
    /// Every `vrrp_track_process`, in file order.
    pub processes: Vec<TrackProcess>,
    /// Every `track_file` (or `vrrp_track_file`), in file order.
    pub files: Vec<TrackFile>,
    /// The service addresses of a MetalLB pool, by instance (the pool mode; keepalived.conf
    /// has no such thing, so `render` does not write it).
    pub services: BTreeMap<String, Service>,
}

/// One address of a MetalLB pool held by an instance: where it comes from, for `vrrpd status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// The pool (metadata.name of the IPAddressPool).
    pub pool: String,
    /// The address.
    pub address: IpAddr,
    /// The reservation's owner in the store: the sharing key, or the request's name.
    pub owner: String,
    /// The requests that share the address (empty: the owner alone).
    pub sharers: Vec<String>,
    /// The eligible nodes in priority order (rendezvous hashing): name and address.
    pub nodes: Vec<(String, IpAddr)>,
}

impl Config {
    /// The script called `name`.
    pub fn script(&self, name: &str) -> Option<&VrrpScript> {
        self.scripts.iter().find(|s| s.name == name)
    }

    /// The `vrrp_track_process` called `name`.
    pub fn process(&self, name: &str) -> Option<&TrackProcess> {
        self.processes.iter().find(|p| p.name == name)
    }

    /// The trackers of `all` (processes or files) that some instance tracks, as
    /// `entries` lists them.
    pub fn tracked<T: Named + Clone, E: Named>(
        &self,
        all: &[T],
        entries: impl Fn(&VrrpInstance) -> &[E],
    ) -> Vec<T> {
        all.iter()
            .filter(|t| {
                self.instances
                    .iter()
                    .any(|i| entries(i).iter().any(|e| e.name() == t.name()))
            })
            .cloned()
            .collect()
    }

    /// The `track_file` called `name`.
    pub fn file(&self, name: &str) -> Option<&TrackFile> {
        self.files.iter().find(|f| f.name == name)
    }

    /// The instance called `name`.
    pub fn instance(&self, name: &str) -> Option<&VrrpInstance> {
        self.instances.iter().find(|i| i.name == name)
    }
}

/// `global_defs`: only what changes vrrpd's behaviour; the rest is accepted and ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalDefs {
    /// `router_id`.
    pub router_id: Option<String>,
    /// `script_user USER [GROUP]`: who scripts run as when they name no user (keepalived's
    /// default is `keepalived_script` if it exists, else root).
    pub script_user: Option<User>,
    /// `enable_script_security`: refuse scripts that a non-root user could change.
    pub enable_script_security: bool,
    /// `vrrp_version`: the default version of IPv4 instances (2 unless set).
    pub vrrp_version: Version,
    /// `vrrp_garp_master_delay`, `vrrp_garp_master_repeat`, `vrrp_garp_master_refresh`,
    /// `vrrp_garp_master_refresh_repeat`, `vrrp_garp_lower_prio_delay`,
    /// `vrrp_garp_lower_prio_repeat`: the defaults of every instance. The lower-priority pair
    /// defaults to the master pair, as in keepalived.
    pub garp: GarpParams,
    /// `vrrp_preempt_on_lower_priority`: the default of every instance's
    /// `preempt_on_lower_priority` (vrrpd's; off unless set).
    pub preempt_on_lower_priority: bool,
    /// `vrrp_lower_prio_no_advert`: the default of every instance's `lower_prio_no_advert`.
    pub lower_prio_no_advert: bool,
    /// `vrrp_startup_delay` in centiseconds: how long vrrpd waits before it starts its
    /// instances (keepalived's: for a network that is slow to come up after a boot).
    pub startup_delay_cs: u32,
    /// `vrrp_garp_interval` in microseconds: the pause between two gratuitous ARPs on an
    /// interface (0: none, keepalived's default).
    pub garp_interval_us: u32,
    /// `vrrp_gna_interval` in microseconds: the same for unsolicited neighbour advertisements.
    pub gna_interval_us: u32,
    /// `notify_fifo` and `vrrp_notify_fifo` (one each at most, in that order): FIFOs every
    /// state change is written to.
    pub notify_fifos: Vec<NotifyFifo>,
    /// `fifo_write_vrrp_states_on_reload`: after a reload every instance's and sync group's
    /// state is written to the FIFOs, as keepalived writes them.
    pub fifo_states_on_reload: bool,
}

/// A FIFO every state change of an instance or sync group is written to, one line each as
/// keepalived writes them (`INSTANCE "VI_1" MASTER 100`, `GROUP "G" BACKUP 0`), and the
/// script that reads it. vrrpd has only keepalived's VRRP part, so `notify_fifo` and
/// `vrrp_notify_fifo` hear the same lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyFifo {
    /// `notify_fifo` or `vrrp_notify_fifo`.
    pub keyword: String,
    /// The FIFO: made (mode 0600) and removed at exit when it does not exist.
    pub path: std::path::PathBuf,
    /// `..._script COMMAND [USER [GROUP]]`: started with the FIFO's path as its last argument
    /// once it is open, stopped at exit.
    pub script: Option<(Command, Option<User>)>,
    /// Where the FIFO was named.
    pub location: Location,
}

impl Default for GlobalDefs {
    fn default() -> Self {
        GlobalDefs {
            router_id: None,
            script_user: None,
            enable_script_security: false,
            vrrp_version: Version::V2,
            garp: GarpParams::default(),
            preempt_on_lower_priority: false,
            lower_prio_no_advert: false,
            startup_delay_cs: 0,
            garp_interval_us: 0,
            gna_interval_us: 0,
            notify_fifos: Vec::new(),
            fifo_states_on_reload: false,
        }
    }
}

/// A user (and optional group) a script runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub user: String,
    /// The group name; the user's primary group when absent.
    pub group: Option<String>,
}

/// A command line: a program and its arguments, split into words as keepalived does (no shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program (`words[0]`) and its arguments; never empty.
    pub words: Vec<String>,
    /// Where it was written.
    pub location: Location,
}

/// `vrrp_script NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrrpScript {
    /// Its name.
    pub name: String,
    /// `script`.
    pub command: Command,
    /// `interval` (default 1 s).
    pub interval: Duration,
    /// `timeout`: a run that lasts longer is killed and counts as a failure (default: the
    /// interval).
    pub timeout: Duration,
    /// `weight` (default 0), -253..=253. An instance's `track_script` may override it.
    pub weight: i32,
    /// `rise` (default 1).
    pub rise: u32,
    /// `fall` (default 1).
    pub fall: u32,
    /// `user USER [GROUP]`; the global `script_user` when absent.
    pub user: Option<User>,
    /// `init_fail`: start failing rather than waiting for a first result.
    pub init_fail: bool,
    /// Where the block starts.
    pub location: Location,
}

/// A block or an entry known by its name.
pub trait Named {
    /// Its name.
    fn name(&self) -> &str;
}

macro_rules! named {
    ($($t:ty),*) => {
        $(impl Named for $t {
            fn name(&self) -> &str {
                &self.name
            }
        })*
    };
}

named!(TrackProcess, TrackedProcess, TrackFile, TrackedFile);

/// How a `vrrp_track_process` compares the parameters it names with a process's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamMatch {
    /// Any parameters (keepalived's default when none are given and no `param_match`).
    Any,
    /// The same parameters, no more (keepalived's default when parameters are given).
    Exact,
    /// The parameters given are the process's first ones (`param_match partial`).
    Partial,
    /// As partial, and the last one given may be the start of the process's
    /// (`param_match initial`).
    Initial,
}

/// `vrrp_track_process NAME { ... }`: how many processes of a name run, as keepalived counts
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackProcess {
    /// Its name.
    pub name: String,
    /// `process NAME [PARAMS...]`: the process name (its `comm`, at most 15 bytes compared)
    /// or, with parameters or `full_command`, its command line's first word, then its
    /// parameters.
    pub process: Vec<String>,
    /// `param_match` (any without parameters, exact with them, unless set).
    pub param_match: ParamMatch,
    /// `full_command`, or parameters given: the command line is compared, not the name.
    pub full_command: bool,
    /// `weight` (default 1): as a track script's, added while the quorum holds (positive) or
    /// while it does not (negative); 0 puts the instance in FAULT while it does not.
    pub weight: i32,
    /// `quorum` (default 1): the fewest matching processes that count as up.
    pub quorum: u32,
    /// `quorum_max` (default none): the most.
    pub quorum_max: u32,
    /// `fork_delay` (or `delay`) in centiseconds: how long the quorum must hold before it
    /// counts as up.
    pub fork_delay_cs: u32,
    /// `terminate_delay` (or `delay`) in centiseconds: how long it must be lost before it counts
    /// as down.
    pub terminate_delay_cs: u32,
}

/// `track_file NAME { file PATH; weight N; init_file [VALUE] [overwrite] }`: an integer in a
/// file, times the weight, moves the priority of the instances that track it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackFile {
    /// Its name.
    pub name: String,
    /// `file`: the file read (a missing or empty one reads as 0).
    pub path: String,
    /// `weight` (default 1).
    pub weight: i32,
    /// `init_file [VALUE] [overwrite]`: the value written at start when the file does not
    /// exist (or always, with `overwrite`).
    pub init: Option<FileInit>,
}

/// `init_file`'s value and whether it overwrites an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileInit {
    /// The value written (default 0).
    pub value: i32,
    /// `overwrite`.
    pub overwrite: bool,
}

/// An instance's `track_file` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedFile {
    /// The `track_file` it names.
    pub name: String,
    /// `weight N` given here, overriding the file's.
    pub weight: Option<i32>,
}

/// An instance's `track_process` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedProcess {
    /// The `vrrp_track_process` it names.
    pub name: String,
    /// `weight N` given here, overriding the process's.
    pub weight: Option<i32>,
}

/// One address of `virtual_ipaddress`: `ADDR[/LEN] [dev IF] [label LABEL]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualAddress {
    /// The address.
    pub address: IpAddr,
    /// Its prefix length (default /32 or /128).
    pub prefix_len: u8,
    /// `dev`: the interface it goes on (default: the instance's).
    pub dev: Option<String>,
    /// `label`: the IPv4 address label.
    pub label: Option<String>,
    /// `preferred_lft`: seconds the address stays preferred (0: deprecated at once, so that
    /// the kernel does not choose it as a source address); None: forever (`preferred_lft
    /// forever`). keepalived's default, and so vrrpd's: 0 for IPv6, forever for IPv4.
    pub preferred_lft: Option<u32>,
}

impl VirtualAddress {
    /// A host address (/32 or /128) on the instance's interface, as OpenShift's VIPs and a
    /// pool's service addresses are, with keepalived's defaults.
    pub fn host(address: IpAddr) -> Self {
        VirtualAddress {
            address,
            prefix_len: if address.is_ipv4() { 32 } else { 128 },
            dev: None,
            label: None,
            preferred_lft: Self::default_preferred_lft(address),
        }
    }

    /// keepalived's `preferred_lft` when none is given: 0 for an IPv6 address (deprecated,
    /// so the node never takes a VIP as the source of its own connections, which would break
    /// when the VIP moves), forever for IPv4.
    pub fn default_preferred_lft(address: IpAddr) -> Option<u32> {
        address.is_ipv6().then_some(0)
    }
}

/// What a `virtual_routes` entry does with what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteType {
    /// Forwards (the default).
    Unicast,
    /// `blackhole`: drops silently.
    Blackhole,
    /// `unreachable`: ICMP unreachable.
    Unreachable,
    /// `prohibit`: ICMP prohibited.
    Prohibit,
}

/// One entry of `virtual_routes`: `[src ADDR] [to] [TYPE] DEST[/LEN] [via|gw ADDR] [dev IF]
/// [metric N] [table N] [no_track]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualRoute {
    /// The destination.
    pub destination: IpAddr,
    /// Its prefix length (default /32 or /128).
    pub prefix_len: u8,
    /// `via` (or `gw`): the next hop.
    pub via: Option<IpAddr>,
    /// `src`: the preferred source address.
    pub src: Option<IpAddr>,
    /// `dev`: the output interface.
    pub dev: Option<String>,
    /// `metric` (`preference`, `priority`).
    pub metric: Option<u32>,
    /// `table` (a number).
    pub table: Option<u32>,
    /// `scope` as its number (rtnetlink's `RT_SCOPE_*`: global 0, site 200, link 253, host
    /// 254, nowhere 255); absent, iproute2's default (link without a gateway, else global).
    pub scope: Option<u8>,
    /// `blackhole`, `unreachable`, `prohibit`.
    pub kind: RouteType,
}

/// One entry of `virtual_rules`: `[inet6] [from PREFIX|all] [to PREFIX] [iif IF] [oif IF]
/// [fwmark N] [priority N] table N [no_track]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualRule {
    /// IPv6 (`inet6`, or an IPv6 prefix); IPv4 otherwise, keepalived's default.
    pub ipv6: bool,
    /// `from`: the source prefix.
    pub from: Option<(IpAddr, u8)>,
    /// `to`: the destination prefix.
    pub to: Option<(IpAddr, u8)>,
    /// `iif`.
    pub iif: Option<String>,
    /// `oif`.
    pub oif: Option<String>,
    /// `fwmark`.
    pub fwmark: Option<u32>,
    /// `priority` (`preference`, `pref`).
    pub priority: Option<u32>,
    /// `table` (`lookup`): required.
    pub table: u32,
}

/// An instance's `track_script` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedScript {
    /// The `vrrp_script` it names.
    pub name: String,
    /// `weight N` given here, overriding the script's.
    pub weight: Option<i32>,
}

/// An instance's `track_interface` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedInterface {
    /// The interface.
    pub name: String,
    /// `weight N` (default 0: FAULT while down).
    pub weight: i32,
}

/// The notify scripts of an instance or a sync group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notify {
    /// `notify_master`.
    pub master: Option<Command>,
    /// `notify_backup`.
    pub backup: Option<Command>,
    /// `notify_fault`.
    pub fault: Option<Command>,
    /// `notify_stop`.
    pub stop: Option<Command>,
    /// `notify`: run on every change with `INSTANCE|GROUP NAME STATE PRIORITY` appended.
    pub any: Option<Command>,
}

impl Notify {
    /// Each command given, with its keyword, in keepalived's order.
    pub fn commands(&self) -> impl Iterator<Item = (&'static str, &Command)> {
        [
            ("notify_master", &self.master),
            ("notify_backup", &self.backup),
            ("notify_fault", &self.fault),
            ("notify_stop", &self.stop),
            ("notify", &self.any),
        ]
        .into_iter()
        .filter_map(|(keyword, c)| c.as_ref().map(|c| (keyword, c)))
    }
}

/// `vrrp_instance NAME { ... }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrrpInstance {
    /// Its name.
    pub name: String,
    /// `interface` (required).
    pub interface: String,
    /// `state MASTER|BACKUP`; absent: derived from the priority.
    pub state: Option<InitialState>,
    /// `virtual_router_id` (required), 1..=255.
    pub vrid: u8,
    /// `priority` (default 100), 1..=255.
    pub priority: u8,
    /// `advert_int` in centiseconds (default 100).
    pub advert_int_cs: u16,
    /// `version`: absent means the global `vrrp_version` for IPv4 and 3 for IPv6.
    pub version: Option<Version>,
    /// `native_ipv6`: an IPv6 instance even before its addresses say so.
    pub native_ipv6: bool,
    /// `nopreempt` clears it.
    pub preempt: bool,
    /// `preempt_delay` in centiseconds.
    pub preempt_delay_cs: u32,
    /// `authentication { auth_type PASS|AH; auth_pass X }` (v2 only): the password as written
    /// (printed redacted);
    /// [`VrrpInstance::auth`] gives what goes on the wire.
    pub auth_pass: Option<Secret>,
    /// `auth_type AH`: the password keys keepalived's IPsec Authentication Header
    /// ([`ipi_core::vrrp::ah`]) instead of riding in the advert. Only ever set on a VRRPv2
    /// instance over IPv4 (keepalived ignores AH elsewhere, and so does the parser).
    pub auth_ah: bool,
    /// `virtual_ipaddress`.
    pub vips: Vec<VirtualAddress>,
    /// `virtual_ipaddress_excluded`: held with the state like the VIPs, but not carried in
    /// adverts (so any number, of either family).
    pub vips_excluded: Vec<VirtualAddress>,
    /// `virtual_routes`: added with the VIPs, removed with them.
    pub virtual_routes: Vec<VirtualRoute>,
    /// `virtual_rules`: added with the VIPs, removed with them.
    pub virtual_rules: Vec<VirtualRule>,
    /// `mcast_src_ip`: the source address of multicast adverts.
    pub mcast_src_ip: Option<IpAddr>,
    /// `unicast_src_ip`.
    pub unicast_src_ip: Option<IpAddr>,
    /// `unicast_peer { ... }`: non-empty means unicast mode.
    pub unicast_peers: Vec<IpAddr>,
    /// `unicast_peer { IP min_ttl N max_ttl M }`: the TTL / hop limit range of the adverts
    /// taken from a peer written with one (keepalived's default, 0 to 255, for the others).
    pub peer_ttl: std::collections::BTreeMap<IpAddr, (u8, u8)>,
    /// `track_script`.
    pub track_scripts: Vec<TrackedScript>,
    /// `track_interface`.
    pub track_interfaces: Vec<TrackedInterface>,
    /// `track_process`.
    pub track_processes: Vec<TrackedProcess>,
    /// `track_file`.
    pub track_files: Vec<TrackedFile>,
    /// `dont_track_primary`: the instance's own interface going down is ignored.
    pub dont_track_primary: bool,
    /// The notify scripts.
    pub notify: Notify,
    /// GARP schedule (the global defaults unless the instance sets its own).
    pub garp: GarpParams,
    /// `lower_prio_no_advert`.
    pub lower_prio_no_advert: bool,
    /// `preempt_on_lower_priority` (vrrpd's): as Backup, take over after Skew_Time when the
    /// master advertises a priority below ours (see
    /// [`InstanceParams::preempt_on_lower_priority`](crate::fsm::InstanceParams)).
    pub preempt_on_lower_priority: bool,
    /// `use_vmac [NAME]` (and `vmac_xmit_base`): the VIPs on a macvlan with RFC 5798's
    /// virtual router MAC address.
    pub vmac: Option<Vmac>,
    /// Where the block starts.
    pub location: Location,
}

/// keepalived's `use_vmac [NAME]`: a macvlan interface (mode private) on the instance's
/// interface, with the virtual router MAC address of RFC 5798 7.3 (00-00-5E-00-01-{VRID},
/// IPv6 00-00-5E-00-02-{VRID}), which holds the VIPs and sends the adverts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vmac {
    /// The macvlan's name: NAME, else keepalived's default (`vrrp.VRID`, then `vrrp1.VRID`,
    /// ... for IPv4, `vrrp6.VRID` second for IPv6), decided once the whole file is read.
    pub name: String,
    /// `vmac_xmit_base`: adverts are sent and received on the instance's interface, with its
    /// own MAC address; only the VIPs are on the macvlan.
    pub xmit_base: bool,
    /// Where `use_vmac` is written.
    pub location: Location,
}

impl Vmac {
    /// The virtual router MAC address of `vrid` for the family (RFC 5798 7.3).
    pub fn mac(vrid: u8, ipv6: bool) -> [u8; 6] {
        [0x00, 0x00, 0x5e, 0x00, if ipv6 { 0x02 } else { 0x01 }, vrid]
    }
}

impl VrrpInstance {
    /// An instance with keepalived's defaults (priority 100, advert_int 1 s, preempting) and
    /// nothing else yet: no interface, VRID or address.
    pub fn new(name: String, garp: GarpParams, location: Location) -> Self {
        VrrpInstance {
            name,
            interface: String::new(),
            state: None,
            vrid: 0,
            priority: 100,
            advert_int_cs: 100,
            version: None,
            native_ipv6: false,
            preempt: true,
            preempt_delay_cs: 0,
            auth_pass: None,
            auth_ah: false,
            vips: Vec::new(),
            vips_excluded: Vec::new(),
            virtual_routes: Vec::new(),
            virtual_rules: Vec::new(),
            mcast_src_ip: None,
            unicast_src_ip: None,
            unicast_peers: Vec::new(),
            peer_ttl: std::collections::BTreeMap::new(),
            track_scripts: Vec::new(),
            track_interfaces: Vec::new(),
            track_processes: Vec::new(),
            track_files: Vec::new(),
            dont_track_primary: false,
            notify: Notify::default(),
            garp,
            lower_prio_no_advert: false,
            preempt_on_lower_priority: false,
            vmac: None,
            location,
        }
    }

    /// Whether the instance is IPv6: `native_ipv6`, or its first VIP is IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.native_ipv6 || self.vips.first().is_some_and(|v| v.address.is_ipv6())
    }

    /// The protocol version it runs: IPv6 is always 3.
    pub fn effective_version(&self, global: &GlobalDefs) -> Version {
        if self.is_ipv6() {
            Version::V3
        } else {
            self.version.unwrap_or(global.vrrp_version)
        }
    }

    /// The authentication on the wire: RFC 2338's 8 bytes, so only the first 8 of the password
    /// count, as in keepalived.
    pub fn auth(&self) -> Auth {
        match &self.auth_pass {
            None => Auth::None,
            Some(_) if self.auth_ah => Auth::Ah,
            Some(p) => Auth::pass(p.expose()),
        }
    }

    /// The key of the AH header (`auth_type AH`), if the instance has one.
    pub fn ah_key(&self) -> Option<ah::Key> {
        let p = self.auth_pass.as_ref().filter(|_| self.auth_ah)?;
        Some(ah::Key::from_password(p.expose()))
    }

    /// Every address held with the state: the VIPs, then the excluded ones.
    pub fn held(&self) -> impl Iterator<Item = &VirtualAddress> {
        self.vips.iter().chain(&self.vips_excluded)
    }

    /// Whether adverts go to the unicast peers rather than the multicast group.
    pub fn is_unicast(&self) -> bool {
        !self.unicast_peers.is_empty()
    }

    /// The interface a VIP goes on: its `dev`, else the instance's interface, or the
    /// instance's macvlan (`use_vmac`) for a VIP of the instance's family on the instance's
    /// interface (keepalived's rule; excluded addresses of the other family stay on the
    /// interface).
    pub fn vip_interface<'a>(&'a self, v: &'a VirtualAddress) -> &'a str {
        let on = v.dev.as_deref().unwrap_or(&self.interface);
        match &self.vmac {
            Some(m) if on == self.interface && v.address.is_ipv6() == self.is_ipv6() => &m.name,
            _ => on,
        }
    }

    /// The interface adverts are sent on: the macvlan of `use_vmac` unless `vmac_xmit_base`.
    pub fn send_interface(&self) -> &str {
        match &self.vmac {
            Some(m) if !m.xmit_base => &m.name,
            _ => &self.interface,
        }
    }
}

/// `vrrp_sync_group NAME { group { ... } }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroup {
    /// Its name.
    pub name: String,
    /// The instances it names (each exists; each in one group only).
    pub members: Vec<String>,
    /// Its notify scripts (`notify` gets `GROUP NAME STATE 0`).
    pub notify: Notify,
    /// Where the block starts.
    pub location: Location,
}
