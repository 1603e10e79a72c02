//! The store for one machine: a directory, locked as a whole while a command uses it.
//!
//! ```text
//! ROOT/FORMAT                      "ipi-net-ipam 1": what this directory is
//! ROOT/lock                        flock(2)ed exclusively for as long as a command has it open
//! ROOT/pools/POOL/ADDRESS      ->  the address's record (JSON): the source of truth
//! ROOT/pools/POOL/@OWNER       ->  the owner's address: an index, checked against the record
//! ROOT/pools/POOL/next         ->  where the next search starts (a hint)
//! ```
//!
//! (POOL and OWNER escaped by [`super::escape`].) Every value is the target of a symbolic link
//! (`ls -l` shows the store): creating a link is atomic, so a link exists with its whole value
//! or not at all, whatever moment a `kill -9` or a power cut strikes, and its value needs no
//! data block flushed. A value is replaced by linking a temporary name and renaming it over the
//! old one. A pool's links share one directory, so one flush of it makes a whole change durable:
//! a reservation costs one directory flush, where files would cost four file-and-directory
//! flushes (which would be most of what a CNI ADD costs).
//!
//! A claim links the owner's index entry before the address's record, and a release removes
//! the record before the index entry: a process killed in between leaves an index entry that
//! points at an address whose record names someone else or no one, which [`Store::owned`]
//! treats as no holding. (File systems that journal metadata in order, ext4 and XFS among them,
//! keep that order across a power cut too; elsewhere a cut before the flush could keep a record
//! without its index entry: a reservation never reported done, that `ipam release` or a CNI GC
//! frees.) Nothing is reported done before its directory is flushed, and an address is taken
//! only by creating its record, so there is never a duplicate. Anything in the directory that
//! ipam never writes is reported as corruption naming the file, and the store is not written
//! to.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::net::IpAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::names::{escape, unescape};
use super::record::{Record, Store, StoreError};

/// What `ROOT/FORMAT` holds.
const FORMAT: &str = "ipi-net-ipam 1\n";

/// The longest value a link holds (Linux's PATH_MAX less the terminating NUL, with room).
const MAX_VALUE: usize = 4000;

/// An open, locked store directory. The lock is released when it is dropped.
#[derive(Debug)]
pub struct FileStore {
    root: PathBuf,
    _lock: Flock<File>,
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_owned(),
        what,
        source,
    }
}

fn corrupt(path: &Path, why: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        place: path.display().to_string(),
        why: why.to_string(),
    }
}

/// The value of a link, `None` when there is none.
fn read_value(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    match fs::read_link(path) {
        Ok(target) => Ok(Some(target.into_os_string().into_encoded_bytes())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == ErrorKind::InvalidInput => Err(corrupt(
            path,
            "not a symbolic link (ipam writes every value as one)",
        )),
        Err(e) => Err(io(path, "reading")(e)),
    }
}

fn checked_value(path: &Path, value: &[u8]) -> Result<(), StoreError> {
    if value.is_empty() || value.len() > MAX_VALUE || value.contains(&0) {
        return Err(io(path, "writing")(io::Error::new(
            ErrorKind::InvalidInput,
            format!(
                "a value of {} bytes does not fit a link (1 to {MAX_VALUE})",
                value.len()
            ),
        )));
    }
    Ok(())
}

/// Creates the link `path` holding `value`; `false` when `path` exists already.
fn create(path: &Path, value: &[u8]) -> Result<bool, StoreError> {
    checked_value(path, value)?;
    match symlink(OsStr::from_bytes(value), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io(path, "creating")(e)),
    }
}

/// Sets the link `path` to `value`, whether or not it exists: a reader sees the old value or the
/// new one.
fn set(path: &Path, value: &[u8]) -> Result<(), StoreError> {
    checked_value(path, value)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    match fs::remove_file(&temp) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(io(&temp, "removing")(e)),
        _ => {}
    }
    symlink(OsStr::from_bytes(value), &temp).map_err(io(&temp, "creating"))?;
    fs::rename(&temp, path).map_err(io(path, "renaming into place"))
}

/// Flushes a directory, so that the links made or removed in it survive a crash.
fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir, "flushing the directory"))
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// Removes a link (its directory is flushed by the caller); a link already gone is fine.
fn remove(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path, "removing")(e)),
    }
}

/// The entries of a directory; none when there is no directory (a pool not used yet).
fn entries(dir: &Path) -> Result<Vec<fs::DirEntry>, StoreError> {
    match fs::read_dir(dir) {
        Ok(entries) => entries
            .collect::<Result<_, _>>()
            .map_err(io(dir, "listing")),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(dir, "listing")(e)),
    }
}

fn parse_ip(path: &Path, text: &[u8]) -> Result<IpAddr, StoreError> {
    let text = String::from_utf8_lossy(text);
    text.trim()
        .parse()
        .map_err(|_| corrupt(path, format!("{:?} is not an IP address", text.trim())))
}

/// A record as a link's value: its JSON without the line end.
fn value(record: &Record) -> Vec<u8> {
    let mut bytes = record.encode();
    bytes.pop();
    bytes
}

/// Whether `root` is a store (`FORMAT` says so); `false` for a directory that may become one
/// (nothing in it but the lock and temporary files, whose names start with `.`).
fn check_format(root: &Path, format: &Path) -> Result<bool, StoreError> {
    match fs::read(format) {
        Ok(bytes) if bytes == FORMAT.as_bytes() => Ok(true),
        Ok(_) => Err(corrupt(
            format,
            format!(
                "expected {:?}: not an ipam store, or a newer one",
                FORMAT.trim()
            ),
        )),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let foreign = entries(root)?.iter().any(|e| {
                let name = e.file_name();
                name != "lock" && !name.as_bytes().starts_with(b".")
            });
            if !foreign {
                return Ok(false);
            }
            // Another command may have made the store between the two looks: it writes FORMAT
            // (renamed into place) before anything else, so FORMAT read after the listing
            // tells a store in the making from a directory that is not one.
            if format.exists() {
                return check_format(root, format);
            }
            Err(corrupt(
                format,
                "missing in a directory that is not empty: not an ipam store",
            ))
        }
        Err(e) => Err(io(format, "reading")(e)),
    }
}

impl FileStore {
    /// Whether `root` holds a store (its FORMAT file; not checked further).
    pub fn exists(root: &Path) -> bool {
        root.join("FORMAT").exists()
    }

    /// Opens (creating it if need be) the store in `root` and takes its lock, waiting for any
    /// other command that holds it.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        fs::create_dir_all(root).map_err(io(root, "creating the store directory"))?;
        let format = root.join("FORMAT");
        // Refuse a directory that is plainly not a store before writing anything into it ...
        check_format(root, &format)?;
        let lock_path = root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path, "opening the lock"))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(&lock_path, "locking")(errno.into()))?;
        // ... and decide for certain under the lock, when no other command is writing FORMAT.
        if !check_format(root, &format)? {
            ipi_core::atomic::write(&format, FORMAT.as_bytes()).map_err(|e| StoreError::Io {
                path: format.clone(),
                what: e.step,
                source: e.source,
            })?;
        }
        Ok(Self {
            root: root.to_owned(),
            _lock: lock,
        })
    }

    fn pool_dir(&self, pool: &str) -> PathBuf {
        Self::pool_path(&self.root, pool)
    }

    /// The directory of `pool` in the store at `root` (which a watcher of the pool follows).
    pub fn pool_path(root: &Path, pool: &str) -> PathBuf {
        root.join("pools").join(escape(pool))
    }

    fn ip_path(&self, pool: &str, ip: IpAddr) -> PathBuf {
        self.pool_dir(pool).join(ip.to_string())
    }

    fn owner_path(&self, pool: &str, owner: &str) -> PathBuf {
        self.pool_dir(pool).join(format!("@{}", escape(owner)))
    }

    fn read_record(&self, path: &Path) -> Result<Option<Record>, StoreError> {
        read_value(path)?
            .map(|bytes| Record::decode(&bytes).map_err(|why| corrupt(path, why)))
            .transpose()
    }

    /// Creates the directory of a pool, durably, if it is not there.
    fn make_pool(&self, pool: &str) -> Result<PathBuf, StoreError> {
        let dir = self.pool_dir(pool);
        if !dir.is_dir() {
            fs::create_dir_all(&dir).map_err(io(&dir, "creating"))?;
            sync_dir(parent(&dir))?;
            sync_dir(&self.root)?;
        }
        Ok(dir)
    }
}

impl Store for FileStore {
    fn owned(&mut self, pool: &str, owner: &str) -> Result<Option<(IpAddr, Record)>, StoreError> {
        let path = self.owner_path(pool, owner);
        let Some(bytes) = read_value(&path)? else {
            return Ok(None);
        };
        let ip = parse_ip(&path, &bytes)?;
        Ok(self
            .record(pool, ip)?
            .filter(|r| r.owner == owner)
            .map(|r| (ip, r)))
    }

    fn record(&mut self, pool: &str, ip: IpAddr) -> Result<Option<Record>, StoreError> {
        self.read_record(&self.ip_path(pool, ip))
    }

    fn claim(&mut self, pool: &str, ip: IpAddr, record: &Record) -> Result<bool, StoreError> {
        let path = self.ip_path(pool, ip);
        // Decoded, not just found: a record that is not ours is reported, not skipped.
        if self.read_record(&path)?.is_some() {
            return Ok(false);
        }
        let dir = self.make_pool(pool)?;
        set(
            &self.owner_path(pool, &record.owner),
            ip.to_string().as_bytes(),
        )?;
        if !create(&path, &value(record))? {
            return Ok(false);
        }
        sync_dir(&dir)?;
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
        if old.owner != new.owner {
            set(
                &self.owner_path(pool, &new.owner),
                ip.to_string().as_bytes(),
            )?;
        }
        set(&self.ip_path(pool, ip), &value(new))?;
        if old.owner != new.owner {
            remove(&self.owner_path(pool, &old.owner))?;
        }
        sync_dir(&self.pool_dir(pool))?;
        Ok(true)
    }

    fn free(&mut self, pool: &str, ip: IpAddr, old: &Record) -> Result<bool, StoreError> {
        if self.record(pool, ip)?.as_ref() != Some(old) {
            return Ok(false);
        }
        remove(&self.ip_path(pool, ip))?;
        let index = self.owner_path(pool, &old.owner);
        if read_value(&index)?.is_some_and(|b| b == ip.to_string().as_bytes()) {
            remove(&index)?;
        }
        sync_dir(&self.pool_dir(pool))?;
        Ok(true)
    }

    fn list(&mut self, pool: &str) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        let mut out = Vec::new();
        for entry in entries(&self.pool_dir(pool))? {
            let name = entry.file_name();
            let path = entry.path();
            if name.as_bytes().starts_with(b"@") || name == "next" {
                continue;
            }
            if name.as_bytes().starts_with(b".") {
                // The temporary link of a writer killed before its rename; we hold the lock,
                // so no writer is at work: it is garbage.
                remove(&path)?;
                continue;
            }
            let ip = parse_ip(&path, name.as_bytes())?;
            if let Some(record) = self.read_record(&path)? {
                out.push((ip, record));
            }
        }
        out.sort_by_key(|(ip, _)| crate::range::to_u128(*ip));
        Ok(out)
    }

    fn pools(&mut self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for entry in entries(&self.root.join("pools"))? {
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
        read_value(&path)?.map(|b| parse_ip(&path, &b)).transpose()
    }

    fn set_next(&mut self, pool: &str, ip: IpAddr) -> Result<(), StoreError> {
        // A hint: replaced atomically but not flushed; a crash that loses it costs a longer
        // search, never an address given twice.
        let dir = self.make_pool(pool)?;
        set(&dir.join("next"), ip.to_string().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    // The store contract is tested on every store in tests/common/behaviours.rs; here, what is
    // the file store's own: its layout, crashes, corruption, temporary files.
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_crash_between_index_and_record_is_no_holding() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        s.make_pool("p").unwrap();
        // The index entry was written, the record was not (killed in between).
        set(&s.owner_path("p", "a"), b"192.0.2.1").unwrap();
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
        fs::write(s.pool_dir("b/x").join(".192.0.2.11.tmp.1.0"), b"{").unwrap();
        let got: Vec<String> = s
            .list("b/x")
            .unwrap()
            .iter()
            .map(|(i, _)| i.to_string())
            .collect();
        assert_eq!(got, ["192.0.2.9", "192.0.2.10", "192.0.2.100"]);
        assert_eq!(s.pools().unwrap(), ["a", "b/x"]);
        assert!(!s.pool_dir("b/x").join(".192.0.2.11.tmp.1.0").exists());
    }

    #[test]
    fn corruption_is_reported_with_the_file_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = FileStore::open(dir.path()).unwrap();
        assert!(s
            .claim("p", ip("192.0.2.1"), &Record::owned_by("a"))
            .unwrap());
        let file = s.ip_path("p", ip("192.0.2.1"));
        fs::remove_file(&file).unwrap();
        symlink("garbage", &file).unwrap();
        let e = s
            .claim("p", ip("192.0.2.1"), &Record::owned_by("b"))
            .unwrap_err();
        assert!(
            e.to_string().contains("192.0.2.1") && e.to_string().contains("corrupt"),
            "{e}"
        );
        assert_eq!(fs::read_link(&file).unwrap(), Path::new("garbage"));
        // A regular file where a link belongs: not ours either.
        fs::remove_file(&file).unwrap();
        fs::write(&file, b"{}").unwrap();
        let e = s.owned("p", "a").unwrap_err();
        assert!(e.to_string().contains("not a symbolic link"), "{e}");
        assert_eq!(fs::read(&file).unwrap(), b"{}");
        fs::remove_file(&file).unwrap();
        fs::write(s.pool_dir("p").join("not-an-ip"), b"{}").unwrap();
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
    fn a_fresh_store_being_created_by_another_command_is_no_corruption() {
        // Another command holds the lock and is writing FORMAT: its temporary file is there.
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("lock"), b"").unwrap();
        fs::write(dir.path().join(".FORMAT.tmp.4242.0"), FORMAT).unwrap();
        FileStore::open(dir.path()).unwrap();
        assert_eq!(
            fs::read(dir.path().join("FORMAT")).unwrap(),
            FORMAT.as_bytes()
        );
    }
}
