//! Helpers shared by ipam's store tests: a real etcd, the stores, `ipam pool reserve` as a
//! process, and the store's invariants.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod behaviours;

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use ipam::alloc::{Order, Pool};
use ipi_lab::etcd::Etcd;
use ipi_store::range::{Space, Span};
use ipi_store::store::{self, Store};

/// The ipam program under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ipam");

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A fresh etcd on loopback, or `None` when etcd is not installed (skipped with a message, a
/// failure under CI: [`ipi_lab::etcd::available`]).
pub fn etcd() -> Option<Etcd> {
    if !ipi_lab::etcd::available() {
        return None;
    }
    Some(Etcd::start().unwrap())
}

/// A fresh etcd on loopback over https, asking for a client certificate, with authentication
/// on ([`Etcd::start_secure`]); `None` when etcd or openssl is not installed.
pub fn secure_etcd() -> Option<Etcd> {
    if !ipi_lab::etcd::available() || !ipi_lab::pki::available() {
        return None;
    }
    Some(Etcd::start_secure().unwrap())
}

/// A pool over `cidr` (its network and broadcast addresses never handed out), named after it.
pub fn pool(cidr: &str, order: Order) -> Pool {
    let net: ipnetwork::IpNetwork = cidr.parse().unwrap();
    let mut space = Space::new(vec![Span::of_network(net)]);
    space.network = Some(net);
    Pool {
        name: format!("test/{cidr}"),
        space,
        order,
    }
}

/// Opens a store by URL (a directory or etcd://...).
pub fn open(url: &str) -> Box<dyn Store> {
    store::open(url).unwrap_or_else(|e| panic!("{url}: {e}"))
}

/// Writes a MetalLB IPAddressPool named `name` over `addresses` into `dir`; returns its path.
pub fn pool_file(dir: &Path, name: &str, addresses: &[&str]) -> PathBuf {
    let list: String = addresses.iter().map(|a| format!("\n  - {a}")).collect();
    let text = format!(
        "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: {name}\n  \
         namespace: metallb-system\nspec:\n  addresses:{list}\n"
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// A private copy of the ipam binary, removed when dropped. Long runs use it: the workspace's
/// target directory is shared, and a build in the middle of a run would otherwise swap the
/// program under test for another version halfway through.
#[derive(Debug)]
pub struct Ipam {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Ipam {
    pub fn copy() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ipam-under-test.")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let path = dir.path().join("ipam");
        std::fs::copy(BIN, &path).unwrap();
        Self { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A store as the ipam program is pointed at it: its URL, and the environment that gets it in
/// (`IPAM_ETCD_*`: the TLS files and credentials of a secure etcd; none for other stores).
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub env: Vec<(String, String)>,
}

impl Target {
    /// A store that needs no settings.
    pub fn plain(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            env: Vec::new(),
        }
    }

    /// The etcd `etcd`, as [`ipi_lab::etcd::USER`] when it is a secure one.
    pub fn etcd(etcd: &Etcd) -> Self {
        Self {
            url: etcd.url(),
            env: etcd.ipam_env(),
        }
    }

    /// The secure etcd `etcd` as [`ipi_lab::etcd::USER`] by its client certificate alone.
    pub fn etcd_by_certificate(etcd: &Etcd) -> Self {
        Self {
            url: etcd.url(),
            env: etcd.ipam_env_by_certificate(),
        }
    }

    /// The ipam program, with `CNI_COMMAND`, `IPAM_STORE` and every `IPAM_ETCD_*` from the
    /// test's own environment removed and this store's environment set.
    pub fn command(&self, ipam: &Path) -> Command {
        let mut command = Command::new(ipam);
        command.env_remove("CNI_COMMAND").env_remove("IPAM_STORE");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("IPAM_ETCD_") {
                command.env_remove(key);
            }
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }
}

/// `ipam pool reserve --pool POOL --name NAME --store URL --json`, started with its output piped.
pub fn spawn_reserve(ipam: &Path, pool: &Path, name: &str, url: &str) -> Child {
    spawn_reserve_at(ipam, pool, name, &Target::plain(url))
}

/// [`spawn_reserve`] against `store`, with its environment.
pub fn spawn_reserve_at(ipam: &Path, pool: &Path, name: &str, store: &Target) -> Child {
    store
        .command(ipam)
        .args(["pool", "reserve", "--json", "--name", name, "--store"])
        .arg(&store.url)
        .arg("--pool")
        .arg(pool)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stdout of a finished process, which must have succeeded (else its stderr is the panic).
pub fn succeeded(child: Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ipam pool reserve`, which must succeed: the address it reports.
pub fn reserve(ipam: &Path, pool: &Path, name: &str, url: &str) -> IpAddr {
    let stdout = succeeded(spawn_reserve(ipam, pool, name, url), name);
    reported_line(&stdout).unwrap_or_else(|| panic!("{name}: no address in {stdout:?}"))
}

/// The address an `ipam pool reserve --json` line reports.
pub fn reported(line: &str) -> Option<IpAddr> {
    let answer: serde_json::Value = serde_json::from_str(line).ok()?;
    answer.get("address")?.as_str()?.parse().ok()
}

/// Every reservation `ipam list --store URL --json` prints: address -> owner, per pool.
pub fn listed(ipam: &Path, url: &str) -> BTreeMap<String, BTreeMap<IpAddr, String>> {
    listed_at(ipam, &Target::plain(url))
}

/// [`listed`] from `store`, with its environment.
pub fn listed_at(ipam: &Path, store: &Target) -> BTreeMap<String, BTreeMap<IpAddr, String>> {
    let list = store
        .command(ipam)
        .args(["list", "--json", "--store", &store.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = succeeded(list, &format!("ipam list --store {}", store.url));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    let mut pools: BTreeMap<String, BTreeMap<IpAddr, String>> = BTreeMap::new();
    for row in rows {
        let pool = row["pool"].as_str().unwrap().to_owned();
        let address: IpAddr = row["address"].as_str().unwrap().parse().unwrap();
        let owner = row["owner"].as_str().unwrap().to_owned();
        let again = pools
            .entry(pool.clone())
            .or_default()
            .insert(address, owner);
        assert!(again.is_none(), "{pool}: {address} listed twice");
    }
    pools
}

/// The invariants of a store after any number of allocations, finished or killed: it opens and
/// lists; every owner holds at most one address in `pool`, and [`Store::owned`] agrees with the
/// record for the owners that hold one (only for `owner` when given: one request per record
/// costs); every `(name, address)` in `done` is there, held by `name`. Returns the pool's
/// reservations (address, owner).
pub fn check_invariants(
    url: &str,
    pool: &str,
    done: &[(String, IpAddr)],
    owner: Option<&str>,
) -> Vec<(IpAddr, String)> {
    let mut s = open(url);
    let held = s.list(pool).unwrap_or_else(|e| panic!("{url}: {e}"));
    let mut owners = HashSet::new();
    for (address, record) in &held {
        assert!(
            owners.insert(record.owner.clone()),
            "{url}: {} holds more than one address (again {address})",
            record.owner
        );
        if owner.is_some_and(|o| o != record.owner) {
            continue;
        }
        assert_eq!(
            s.owned(pool, &record.owner).unwrap().map(|(a, _)| a),
            Some(*address),
            "{url}: the owner index of {} disagrees with its record",
            record.owner
        );
    }
    let by_address: BTreeMap<IpAddr, &str> =
        held.iter().map(|(a, r)| (*a, r.owner.as_str())).collect();
    for (name, address) in done {
        assert_eq!(
            by_address.get(address).copied(),
            Some(name.as_str()),
            "{url}: {name} was told {address}, which the store does not give it"
        );
    }
    held.into_iter().map(|(a, r)| (a, r.owner)).collect()
}

/// A small, seeded pseudo-random sequence (splitmix64): the seed is printed, so that a failing
/// run can be repeated with `IPAM_TEST_SEED`.
#[derive(Debug)]
pub struct Random(u64);

impl Random {
    /// From `IPAM_TEST_SEED` when set, else from the clock; prints the seed either way.
    pub fn seeded(test: &str) -> Self {
        let seed = std::env::var("IPAM_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("{test}: IPAM_TEST_SEED={seed}");
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What [`allocate_concurrently`] saw.
#[derive(Debug)]
pub struct Allocations {
    /// Every (name, address) a process reported, in no order.
    pub reported: Vec<(String, IpAddr)>,
    /// The stderr of every process that failed.
    pub failures: Vec<String>,
    /// Wall time of the whole run.
    pub elapsed: std::time::Duration,
}

/// `processes` workers at once, each running `each` `ipam pool reserve` processes one after the
/// other (names `W-I`), against `store`.
pub fn allocate_concurrently(
    ipam: &Path,
    pool: &Path,
    store: &Target,
    processes: usize,
    each: usize,
) -> Allocations {
    let start = std::time::Instant::now();
    let workers: Vec<_> = (0..processes)
        .map(|w| {
            let (ipam, pool, store) = (ipam.to_owned(), pool.to_owned(), store.clone());
            std::thread::spawn(move || {
                let mut reported = Vec::new();
                let mut failures = Vec::new();
                for i in 0..each {
                    let name = format!("{w}-{i}");
                    let out = spawn_reserve_at(&ipam, &pool, &name, &store)
                        .wait_with_output()
                        .unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    match reported_line(&stdout) {
                        Some(address) if out.status.success() => reported.push((name, address)),
                        _ => failures.push(format!(
                            "{name}: {}: {stdout}{}",
                            out.status,
                            String::from_utf8_lossy(&out.stderr)
                        )),
                    }
                }
                (reported, failures)
            })
        })
        .collect();
    let mut all = Allocations {
        reported: Vec::new(),
        failures: Vec::new(),
        elapsed: std::time::Duration::ZERO,
    };
    for worker in workers {
        let (reported, failures) = worker.join().unwrap();
        all.reported.extend(reported);
        all.failures.extend(failures);
    }
    all.elapsed = start.elapsed();
    all
}

/// The address of the first complete line of `ipam pool reserve --json` output.
pub fn reported_line(stdout: &str) -> Option<IpAddr> {
    let (line, _) = stdout.split_once('\n')?;
    reported(line)
}

/// What a finished ipam run printed.
#[derive(Debug)]
pub struct Run {
    pub ok: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// The addresses of a CNI result as it writes them (`192.0.2.10/24`), in order.
pub fn cni_addresses(result: &serde_json::Value) -> Vec<String> {
    result["ips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ip| ip["address"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs `command` with `stdin` as its input and waits for it (a program that exits without
/// reading its input, as a CNI VERSION may, is not an error).
pub fn finish(command: &mut Command, stdin: &[u8]) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    Run {
        ok: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
