//! The store for one machine: a directory, locked as a whole while a command uses it.
//!
//! ```text
//! ROOT/FORMAT                      "ipi-net-ipam 1": what this directory is
//! ROOT/lock                        flock(2)ed exclusively for as long as a command has it open
//! ROOT/pools/POOL/ips/ADDRESS      the address's record (JSON), the source of truth
//! ROOT/pools/POOL/owners/OWNER     the owner's address: an index, checked against the record
//! ROOT/pools/POOL/next             where the next search starts (a hint)
//! ```
//!
//! (POOL and OWNER escaped by [`super::escape`].) Every file is written atomically and flushed
//! with its directory before a command reports success, so a `kill -9` at any point leaves each
//! file old or new, never half written. A claim writes the owner's index entry before the
//! address's record, and a release removes the record before the index entry: a crash between
//! the two leaves an index entry that points at an address whose record names someone else or
//! no one, which [`Store::owned`] treats as no holding. Nothing is ever reported done before
//! its record is on disk, and an address is taken only by creating its record, so there is
//! never a duplicate. Anything in the directory that a writer never wrote is reported as
//! corruption naming the file, and the store is not written to.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipi_core::atomic;
use nix::fcntl::{Flock, FlockArg};

use super::{escape, unescape, Record, Store, StoreError};

/// What `ROOT/FORMAT` holds.
const FORMAT: &str = "ipi-net-ipam 1\n";

/// An open, locked store directory. The lock is released when it is dropped.
#[derive(Debug)]
pub struct FileStore {
    root: PathBuf,
    _lock: Flock<File>,
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_owned(),
        what,
        source,
    }
}

fn corrupt(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        place: path.display().to_string(),
        why: why.into(),
    }
}

/// Reads a file, `None` when there is none.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, "reading")(e)),
    }
}

/// Flushes a directory, so that a rename or removal in it survives a crash.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir, "flushing the directory"))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    atomic::write(path, bytes)
        .map(drop)
        .map_err(|e| StoreError::Io {
            path: path.to_owned(),
            what: e.step,
            source: e.source,
        })
}

/// Removes a file and flushes its directory; a file already gone is fine.
fn remove(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => path.parent().map_or(Ok(()), sync_dir),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path, "removing")(e)),
    }
}

fn parse_ip(path: &Path, text: &str) -> Result<IpAddr, StoreError> {
    text.trim()
        .parse()
        .map_err(|_| corrupt(path, format!("{:?} is not an IP address", text.trim())))
}

impl FileStore {
    /// Opens (creating it if need be) the store in `root` and takes its lock, waiting for any
    /// other command that holds it.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(root).map_err(io(root, "creating the store directory"))?;
        let format = root.join("FORMAT");
        match read_optional(&format)? {
            Some(bytes) if bytes == FORMAT.as_bytes() => {}
            Some(_) => {
                return Err(corrupt(
                    &format,
                    format!(
                        "expected {:?}: not an ipam store, or a newer one",
                        FORMAT.trim()
                    ),
                ))
            }
            None => {
                let foreign = fs::read_dir(root)
                    .map_err(io(root, "listing"))?
                    .filter_map(Result::ok)
                    .any(|e| e.file_name() != "lock");
                if foreign {
                    return Err(corrupt(
                        &format,
                        "missing in a directory that is not empty: not an ipam store",
                    ));
                }
            }
        }
        let lock_path = root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path, "opening the lock"))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(&lock_path, "locking")(errno.into()))?;
        if !format.exists() {
            write(&format, FORMAT.as_bytes())?;
        }
        Ok(Self {
            root: root.to_owned(),
            _lock: lock,
        })
    }

    fn pool_dir(&self, pool: &str) -> PathBuf {
        self.root.join("pools").join(escape(pool))
    }

    fn ip_path(&self, pool: &str, ip: IpAddr) -> PathBuf {
        self.pool_dir(pool).join("ips").join(ip.to_string())
    }

    fn owner_path(&self, pool: &str, owner: &str) -> PathBuf {
        self.pool_dir(pool).join("owners").join(escape(owner))
    }

    fn read_record(&self, path: &Path) -> Result<Option<Record>, StoreError> {
        read_optional(path)?
            .map(|bytes| Record::decode(&bytes).map_err(|why| corrupt(path, why)))
            .transpose()
    }

    /// Creates the directories of a pool.
    fn make_pool(&self, pool: &str) -> Result<(), StoreError> {
        let dir = self.pool_dir(pool);
        let missing: Vec<PathBuf> = ["ips", "owners"]
            .iter()
            .map(|sub| dir.join(sub))
            .filter(|path| !path.is_dir())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        for path in &missing {
            fs::create_dir_all(path).map_err(io(path, "creating"))?;
        }
        // The new directories must survive a crash before a record is written into them.
        sync_dir(&dir)?;
        dir.parent().map_or(Ok(()), sync_dir)?;
        sync_dir(&self.root)
    }

    /// Writes `record` for `ip`, after pointing its owner's index entry at `ip`.
    fn put(&self, pool: &str, ip: IpAddr, record: &Record) -> Result<(), StoreError> {
        self.make_pool(pool)?;
        write(
            &self.owner_path(pool, &record.owner),
            format!("{ip}\n").as_bytes(),
        )?;
        write(&self.ip_path(pool, ip), &record.encode())
    }
}

impl Store for FileStore {
    fn owned(&mut self, pool: &str, owner: &str) -> Result<Option<(IpAddr, Record)>, StoreError> {
        let path = self.owner_path(pool, owner);
        let Some(bytes) = read_optional(&path)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let ip = parse_ip(&path, &text)?;
        Ok(self
            .record(pool, ip)?
            .filter(|r| r.owner == owner)
            .map(|r| (ip, r)))
    }

    fn record(&mut self, pool: &str, ip: IpAddr) -> Result<Option<Record>, StoreError> {
        self.read_record(&self.ip_path(pool, ip))
    }

    fn claim(&mut self, pool: &str, ip: IpAddr, record: &Record) -> Result<bool, StoreError> {
        if self.record(pool, ip)?.is_some() {
            return Ok(false);
        }
        self.put(pool, ip, record)?;
        Ok(true)
    }

    fn replace(
        &mut self,
        pool: &str,
        ip: IpAddr,
        old: &Record,
        new: &Record,
    ) -> Result<bool, StoreError> {
        if self.record(pool, ip)?.as_ref() != Some(old) {
            return Ok(false);
        }
        self.put(pool, ip, new)?;
        if old.owner != new.owner {
            remove(&self.owner_path(pool, &old.owner))?;
        }
        Ok(true)
    }

    fn free(&mut self, pool: &str, ip: IpAddr, old: &Record) -> Result<bool, StoreError> {
        if self.record(pool, ip)?.as_ref() != Some(old) {
            return Ok(false);
        }
        remove(&self.ip_path(pool, ip))?;
        let index = self.owner_path(pool, &old.owner);
        if read_optional(&index)?
            .is_some_and(|b| String::from_utf8_lossy(&b).trim() == ip.to_string())
        {
            remove(&index)?;
        }
        Ok(true)
    }

    fn list(&mut self, pool: &str) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        let dir = self.pool_dir(pool).join("ips");
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&dir, "listing")(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io(&dir, "listing"))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let path = entry.path();
            if name.starts_with('.') {
                // A temporary file of a writer killed before its rename; we hold the lock, so
                // no writer is at work: it is garbage.
                remove(&path)?;
                continue;
            }
            let ip = parse_ip(&path, &name)?;
            if let Some(record) = self.read_record(&path)? {
                out.push((ip, record));
            }
        }
        out.sort_by_key(|(ip, _)| crate::range::to_u128(*ip));
        Ok(out)
    }

    fn pools(&mut self) -> Result<Vec<String>, StoreError> {
        let dir = self.root.join("pools");
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&dir, "listing")(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io(&dir, "listing"))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let pool = unescape(&name)
                .filter(|p| escape(p) == name)
                .ok_or_else(|| corrupt(&entry.path(), "not a pool directory name"))?;
            out.push(pool);
        }
        out.sort();
        Ok(out)
    }

    fn next(&mut self, pool: &str) -> Result<Option<IpAddr>, StoreError> {
        let path = self.pool_dir(pool).join("next");
        read_optional(&path)?
            .map(|b| parse_ip(&path, &String::from_utf8_lossy(&b)))
            .transpose()
    }

    fn set_next(&mut self, pool: &str, ip: IpAddr) -> Result<(), StoreError> {
        // A hint: renamed into place (never half written) but not flushed, which would cost
        // two more disk flushes per allocation for nothing a crash could make unsafe.
        self.make_pool(pool)?;
        let path = self.pool_dir(pool).join("next");
        let temp = self.pool_dir(pool).join(".next.tmp");
        let mut f = File::create(&temp).map_err(io(&temp, "creating"))?;
        f.write_all(format!("{ip}\n").as_bytes())
            .map_err(io(&temp, "writing"))?;
        fs::rename(&temp, &path).map_err(io(&path, "renaming into place"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn claims_once_and_frees_only_what_it_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        let a = Record::owned_by("ctr/eth0");
        assert!(s.claim("p", ip("192.0.2.10"), &a).unwrap());
        assert!(!s
            .claim("p", ip("192.0.2.10"), &Record::owned_by("other"))
            .unwrap());
        assert_eq!(
            s.owned("p", "ctr/eth0").unwrap(),
            Some((ip("192.0.2.10"), a.clone()))
        );
        assert_eq!(s.owned("p", "other").unwrap(), None);
        assert!(!s
            .free("p", ip("192.0.2.10"), &Record::owned_by("other"))
            .unwrap());
        assert!(s.free("p", ip("192.0.2.10"), &a).unwrap());
        assert_eq!(s.owned("p", "ctr/eth0").unwrap(), None);
        assert!(s.list("p").unwrap().is_empty());
    }

    #[test]
    fn a_crash_between_index_and_record_is_no_holding() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        s.make_pool("p").unwrap();
        // The index entry was written, the record was not (killed in between).
        write(&s.owner_path("p", "a"), b"192.0.2.1\n").unwrap();
        assert_eq!(s.owned("p", "a").unwrap(), None);
        // Someone else takes the address: a's stale entry still points there, and is no holding.
        assert!(s
            .claim("p", ip("192.0.2.1"), &Record::owned_by("b"))
            .unwrap());
        assert_eq!(s.owned("p", "a").unwrap(), None);
    }

    #[test]
    fn lists_sorted_pools_and_addresses_and_drops_dead_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        for a in ["192.0.2.10", "192.0.2.9", "192.0.2.100"] {
            assert!(s.claim("b/x", ip(a), &Record::owned_by(a)).unwrap());
        }
        assert!(s
            .claim("a", ip("2001:db8::1"), &Record::owned_by("v6"))
            .unwrap());
        fs::write(s.pool_dir("b/x").join("ips/.192.0.2.11.tmp.1.0"), b"{").unwrap();
        let got: Vec<String> = s
            .list("b/x")
            .unwrap()
            .iter()
            .map(|(i, _)| i.to_string())
            .collect();
        assert_eq!(got, ["192.0.2.9", "192.0.2.10", "192.0.2.100"]);
        assert_eq!(s.pools().unwrap(), ["a", "b/x"]);
        assert!(!s.pool_dir("b/x").join("ips/.192.0.2.11.tmp.1.0").exists());
    }

    #[test]
    fn corruption_is_reported_with_the_file_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        assert!(s
            .claim("p", ip("192.0.2.1"), &Record::owned_by("a"))
            .unwrap());
        let file = s.ip_path("p", ip("192.0.2.1"));
        fs::write(&file, b"garbage").unwrap();
        let e = s
            .claim("p", ip("192.0.2.1"), &Record::owned_by("b"))
            .unwrap_err();
        assert!(
            e.to_string().contains("192.0.2.1") && e.to_string().contains("corrupt"),
            "{e}"
        );
        assert_eq!(fs::read(&file).unwrap(), b"garbage");
        fs::remove_file(&file).unwrap();
        fs::write(s.pool_dir("p").join("ips/not-an-ip"), b"{}").unwrap();
        assert!(s.list("p").unwrap_err().to_string().contains("not-an-ip"));
    }

    #[test]
    fn refuses_a_directory_that_is_not_a_store() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("precious"), b"x").unwrap();
        let e = FileStore::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not an ipam store"), "{e}");
        fs::write(dir.path().join("FORMAT"), b"something else\n").unwrap();
        assert!(FileStore::open(dir.path()).is_err());
        assert_eq!(fs::read(dir.path().join("precious")).unwrap(), b"x");
    }

    #[test]
    fn the_next_hint_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        assert_eq!(s.next("p").unwrap(), None);
        s.set_next("p", ip("2001:db8::5")).unwrap();
        assert_eq!(s.next("p").unwrap(), Some(ip("2001:db8::5")));
    }
}
