//! Following one pool's reservations as they change, for a reader that acts on them (vrrpd
//! holding a MetalLB pool's addresses): list, wait for a change, list again. Everything here is
//! a future on the caller's runtime (a daemon's): nothing waits for the store on the runtime's
//! own thread (reading a few small files and setting watches aside), and no runtime or thread
//! of the follower's own is started.
//!
//! The file store is watched with inotify (the pool's directory, and the directories above it
//! until the pool's exists), its listings made on the runtime's blocking threads (they wait for
//! the store's lock); etcd with a watch on the pool's records. The watch is set before the
//! first listing, so a change made between a listing and the next wait is never missed; the
//! caller lists again after a quiet wait too, which repairs anything a watch could lose.

use std::fmt;
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

#[cfg(feature = "etcd")]
use super::etcd::EtcdClient;
use super::file::FileStore;
#[cfg(not(feature = "etcd"))]
use super::location::without_etcd;
use super::location::{check, locate, Location, StoreSpec};
use super::record::{Record, Store, StoreError};

/// One pool of a store, followed.
#[derive(Debug)]
pub enum Follower {
    /// A directory, watched with inotify.
    File(FileFollow),
    /// etcd, watched (boxed: its client is a kilobyte).
    #[cfg(feature = "etcd")]
    Etcd(Box<EtcdFollow>),
}

impl Follower {
    /// Every reservation of the pool now, ordered by address.
    pub async fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        match self {
            Follower::File(f) => f.list().await,
            #[cfg(feature = "etcd")]
            Follower::Etcd(f) => f.list().await,
        }
    }

    /// Waits up to `timeout` for a change: `true` when something may have changed.
    pub async fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        match self {
            Follower::File(f) => f.wait(timeout).await,
            #[cfg(feature = "etcd")]
            Follower::Etcd(f) => f.wait(timeout).await,
        }
    }
}

/// Follows `pool` in the store `url` names, on the runtime this is called on. A file store that
/// does not exist yet is followed until it does (it holds no reservations meanwhile); an etcd
/// that cannot be reached is an error.
pub async fn follow(url: &str, pool: &str) -> Result<Follower, StoreError> {
    follow_spec(&StoreSpec::plain(url), pool).await
}

/// [`follow`] with the etcd settings of `spec` (`etcd+https://`, client certificates, a user).
pub async fn follow_spec(spec: &StoreSpec, pool: &str) -> Result<Follower, StoreError> {
    check(spec)?;
    let url = spec.url.as_str();
    Ok(match locate(url)? {
        Location::Dir(root) => Follower::File(FileFollow::new(root, pool)?),
        #[cfg(not(feature = "etcd"))]
        Location::Etcd { .. } => return Err(without_etcd(url)),
        #[cfg(feature = "etcd")]
        Location::Etcd { rest, tls } => {
            let mut client = EtcdClient::connect(url, rest, tls, &spec.etcd).await?;
            let stream = client.watch_pool(pool).await?;
            Follower::Etcd(Box::new(EtcdFollow {
                client,
                stream,
                pool: pool.to_owned(),
            }))
        }
    })
}

/// The inotify instance, as the runtime's reactor polls it.
struct Watches(Inotify);

impl AsRawFd for Watches {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// The file store's pool, watched with inotify.
pub struct FileFollow {
    root: PathBuf,
    pool: String,
    inotify: AsyncFd<Watches>,
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
        // SAFETY: `Watches` owns the inotify descriptor (nix's `Inotify` holds it as an
        // `OwnedFd`) and is owned by the `AsyncFd` until both are dropped, never replaced:
        // `as_raw_fd` names one open descriptor for the registration's whole life.
        #[allow(unsafe_code)]
        let inotify =
            unsafe { AsyncFd::register_with_interest(Watches(inotify), Interest::READABLE) }
                .map_err(|e| StoreError::Io {
                    path: root.to_owned(),
                    what: "watching",
                    source: e.into(),
                })?;
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
                .get_ref()
                .0
                .add_watch(&dir, flags)
                .map_err(inotify_error(&dir, "watching"))?;
            self.watched.push(dir);
        }
        Ok(())
    }

    /// Every reservation of the pool, read on a blocking thread: the store's lock may be held
    /// by a command for a while, and the caller's runtime must not wait for it.
    async fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        let (root, pool) = (self.root.clone(), self.pool.clone());
        let listing = tokio::task::spawn_blocking(move || {
            if !FileStore::exists(&root) {
                return Ok(Vec::new());
            }
            FileStore::open(&root)?.list(&pool)
        });
        listing.await.map_err(|e| StoreError::Io {
            path: self.root.clone(),
            what: "listing the pool",
            source: std::io::Error::other(e),
        })?
    }

    async fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        let changed = match tokio::time::timeout(timeout, self.inotify.readable()).await {
            Err(_) => false,
            Ok(Err(source)) => {
                return Err(StoreError::Io {
                    path: self.root.clone(),
                    what: "waiting for changes",
                    source,
                })
            }
            Ok(Ok(mut ready)) => {
                // Every waiting event is read, to EAGAIN: only then is the readiness cleared.
                let any = drain(&ready.get_inner().0, &self.root)?;
                ready.clear_ready();
                any
            }
        };
        if changed {
            // A directory on the way may have appeared (or been replaced).
            self.watched.retain(|d| d.is_dir());
            self.watch_more()?;
        }
        Ok(changed)
    }
}

/// Reads every waiting event: whether there was one.
fn drain(inotify: &Inotify, root: &Path) -> Result<bool, StoreError> {
    let mut any = false;
    loop {
        match inotify.read_events() {
            Ok(events) if events.is_empty() => return Ok(any),
            Ok(_) => any = true,
            Err(nix::Error::EAGAIN) => return Ok(any),
            Err(e) => return Err(inotify_error(root, "reading changes")(e)),
        }
    }
}

/// An etcd pool, watched.
#[cfg(feature = "etcd")]
pub struct EtcdFollow {
    client: EtcdClient,
    stream: etcd_client::WatchStream,
    pool: String,
}

#[cfg(feature = "etcd")]
impl fmt::Debug for EtcdFollow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdFollow")
            .field("client", &self.client)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "etcd")]
impl EtcdFollow {
    async fn list(&mut self) -> Result<Vec<(IpAddr, Record)>, StoreError> {
        self.client.list(&self.pool).await
    }

    async fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        match self.client.wait_change(&mut self.stream, timeout).await {
            Ok(changed) => Ok(changed),
            Err(e) => {
                // A broken watch is set again, so that the next wait can see changes; the
                // caller lists again after an error.
                if let Ok(stream) = self.client.watch_pool(&self.pool).await {
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
        // The follower's futures on a runtime of the test's, as on a daemon's.
        let runtime = ipi_core::service::runtime().unwrap();
        runtime.block_on(claim_in_a_store_made_later());
    }

    async fn claim_in_a_store_made_later() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let mut f = follow(root.to_str().unwrap(), "pool/p").await.unwrap();
        assert!(f.list().await.unwrap().is_empty());
        assert!(!f.wait(Duration::from_millis(10)).await.unwrap());
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        // Each step of the way (the store, pools/, the pool) is seen and followed.
        let mut store = FileStore::open(&root).unwrap();
        assert!(store.claim("pool/p", ip, &Record::owned_by("a")).unwrap());
        drop(store);
        let start = Instant::now();
        let mut seen = Vec::new();
        while seen.is_empty() && start.elapsed() < Duration::from_secs(5) {
            f.wait(Duration::from_millis(100)).await.unwrap();
            seen = f.list().await.unwrap();
        }
        assert_eq!(seen, [(ip, Record::owned_by("a"))]);
        // Now that the pool's directory is watched, a release wakes the waiter.
        let mut store = FileStore::open(&root).unwrap();
        assert!(store.free("pool/p", ip, &Record::owned_by("a")).unwrap());
        drop(store);
        assert!(f.wait(Duration::from_secs(5)).await.unwrap());
        assert!(f.list().await.unwrap().is_empty());
    }
}
