//! Following one pool's reservations as they change, for a reader that acts on them (vrrpd
//! holding a MetalLB pool's addresses): list, wait for a change, list again.
//!
//! The file store is watched with inotify (the pool's directory, and the directories above it
//! until the pool's exists), etcd with a watch on the pool's records. The watch is set before
//! the first listing, so a change made between a listing and the next wait is never missed;
//! the caller lists again after a quiet wait too, which repairs anything a watch could lose.

use std::fmt;
use std::net::IpAddr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

#[cfg(feature = "etcd")]
use super::etcd::EtcdStore;
use super::file::FileStore;
use super::{locate, Location, Record, Store, StoreError, StoreSpec};

/// One pool of a store, followed.
pub trait Follow: fmt::Debug + Send {
    /// Every reservation of the pool now, ordered by address.
    fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError>;

    /// Waits up to `timeout` for a change: `true` when something may have changed.
    fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError>;
}

/// Follows `pool` in the store `url` names. A file store that does not exist yet is followed
/// until it does (it holds no reservations meanwhile); an etcd that cannot be reached is an
/// error.
pub fn follow(url: &str, pool: &str) -> Result<Box<dyn Follow>, StoreError> {
    follow_spec(&StoreSpec::plain(url), pool)
}

/// [`follow`] with the etcd settings of `spec` (`etcd+https://`, client certificates, a user).
pub fn follow_spec(spec: &StoreSpec, pool: &str) -> Result<Box<dyn Follow>, StoreError> {
    super::check(spec)?;
    let url = spec.url.as_str();
    Ok(match locate(url)? {
        Location::Dir(root) => Box::new(FileFollow::new(root, pool)?),
        #[cfg(not(feature = "etcd"))]
        Location::Etcd { .. } => return Err(super::without_etcd(url)),
        #[cfg(feature = "etcd")]
        Location::Etcd { rest, tls } => {
            let mut store = EtcdStore::connect(url, rest, tls, &spec.etcd)?;
            let stream = store.watch_pool(pool)?;
            Box::new(EtcdFollow {
                store,
                stream,
                pool: pool.to_owned(),
            })
        }
    })
}

/// The file store's pool, watched with inotify.
struct FileFollow {
    root: PathBuf,
    pool: String,
    inotify: Inotify,
    /// The directories watched so far, from the root down to the pool's.
    watched: Vec<PathBuf>,
}

impl fmt::Debug for FileFollow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileFollow")
            .field("root", &self.root)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

fn inotify_error<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl FnOnce(nix::Error) -> StoreError + 'a {
    move |e| StoreError::Io {
        path: path.to_owned(),
        what,
        source: e.into(),
    }
}

impl FileFollow {
    fn new(root: &Path, pool: &str) -> Result<Self, StoreError> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(inotify_error(root, "watching"))?;
        let mut follow = Self {
            root: root.to_owned(),
            pool: pool.to_owned(),
            inotify,
            watched: Vec::new(),
        };
        follow.watch_more()?;
        Ok(follow)
    }

    /// Watches the next directories on the way to the pool's that exist now. The root's parent
    /// first, so that a store made later is seen.
    fn watch_more(&mut self) -> Result<(), StoreError> {
        let pool_dir = FileStore::pool_path(&self.root, &self.pool);
        let parent = self.root.parent().unwrap_or(Path::new("/")).to_path_buf();
        let way = [parent, self.root.clone(), self.root.join("pools"), pool_dir];
        let flags = AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_ONLYDIR;
        for dir in way {
            if self.watched.contains(&dir) || !dir.is_dir() {
                continue;
            }
            self.inotify
                .add_watch(&dir, flags)
                .map_err(inotify_error(&dir, "watching"))?;
            self.watched.push(dir);
        }
        Ok(())
    }

    /// Reads every waiting event: whether there was one.
    fn drain(&mut self) -> Result<bool, StoreError> {
        let mut any = false;
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => return Ok(any),
                Ok(_) => any = true,
                Err(nix::Error::EAGAIN) => return Ok(any),
                Err(e) => return Err(inotify_error(&self.root, "reading changes")(e)),
            }
        }
    }
}

impl Follow for FileFollow {
    fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        if !FileStore::exists(&self.root) {
            return Ok(Vec::new());
        }
        FileStore::open(&self.root)?.list(&self.pool)
    }

    fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let ready = {
            let mut fds = [PollFd::new(self.inotify.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(ms)) {
                Ok(n) => n > 0,
                Err(nix::Error::EINTR) => false,
                Err(e) => return Err(inotify_error(&self.root, "waiting for changes")(e)),
            }
        };
        let changed = ready && self.drain()?;
        if changed {
            // A directory on the way may have appeared (or been replaced).
            self.watched.retain(|d| d.is_dir());
            self.watch_more()?;
        }
        Ok(changed)
    }
}

/// An etcd pool, watched.
#[cfg(feature = "etcd")]
struct EtcdFollow {
    store: EtcdStore,
    stream: etcd_client::WatchStream,
    pool: String,
}

#[cfg(feature = "etcd")]
impl fmt::Debug for EtcdFollow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdFollow")
            .field("store", &self.store)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "etcd")]
impl Follow for EtcdFollow {
    fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        self.store.list(&self.pool)
    }

    fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        match self.store.wait_change(&mut self.stream, timeout) {
            Ok(changed) => Ok(changed),
            Err(e) => {
                // A broken watch is set again, so that the next wait can see changes; the
                // caller lists again after an error.
                if let Ok(stream) = self.store.watch_pool(&self.pool) {
                    self.stream = stream;
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_claim_in_a_store_made_later_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let mut f = follow(root.to_str().unwrap(), "pool/p").unwrap();
        assert!(f.list().unwrap().is_empty());
        assert!(!f.wait(Duration::from_millis(10)).unwrap());
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        // Each step of the way (the store, pools/, the pool) is seen and followed.
        let mut store = FileStore::open(&root).unwrap();
        assert!(store.claim("pool/p", ip, &Record::owned_by("a")).unwrap());
        drop(store);
        let start = Instant::now();
        let mut seen = Vec::new();
        while seen.is_empty() && start.elapsed() < Duration::from_secs(5) {
            f.wait(Duration::from_millis(100)).unwrap();
            seen = f.list().unwrap();
        }
        assert_eq!(seen, [(ip, Record::owned_by("a"))]);
        // Now that the pool's directory is watched, a release wakes the waiter.
        let mut store = FileStore::open(&root).unwrap();
        assert!(store.free("pool/p", ip, &Record::owned_by("a")).unwrap());
        drop(store);
        assert!(f.wait(Duration::from_secs(5)).unwrap());
        assert!(f.list().unwrap().is_empty());
    }
}
