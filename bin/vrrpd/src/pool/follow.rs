//! The store followed on a thread of its own: the store's calls block (etcd's client runs on a
//! runtime of its own, which cannot run inside the daemon's), the daemon's event loop must not.
//! Each new listing is kept in [`Latest`] and announced on a channel; the daemon then reloads,
//! building its configuration from the latest listing. A store that cannot be read is logged
//! and the last good listing stays: nothing held is dropped because the store is away.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ipi_store::store::follow::Follow;
use ipi_store::store::{Record, StoreError};
use tokio::sync::mpsc;

/// One listing of the pool.
pub type Listing = Vec<(IpAddr, Record)>;

/// The latest listing, shared between the follower and the daemon's loader.
#[derive(Debug, Clone, Default)]
pub struct Latest(Arc<Mutex<Listing>>);

impl Latest {
    /// The latest listing.
    pub fn get(&self) -> Listing {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, listing: Listing) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = listing;
    }
}

/// How long the follower waits for a change before it lists again anyway (a lost inotify
/// event or etcd watch costs at most this).
const RELIST: Duration = Duration::from_secs(5);

/// How long a store error is quiet before the same error is logged again.
const ERROR_EVERY: Duration = Duration::from_secs(30);

/// Follows `pool` in the store `url`: the first listing is made before this returns (a store
/// that cannot be read is an error then), later ones on a thread that sends `()` on the
/// channel after each listing that differs.
pub fn start(url: &str, pool: &str) -> Result<(Latest, mpsc::UnboundedReceiver<()>), StoreError> {
    let mut follower = ipi_store::store::follow::follow(url, pool)?;
    let latest = Latest::default();
    latest.set(follower.list()?);
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = latest.clone();
    let name = pool.to_owned();
    std::thread::Builder::new()
        .name("pool-follower".into())
        .spawn(move || run(follower.as_mut(), &shared, &tx, &name))
        .map_err(|source| StoreError::Io {
            path: url.into(),
            what: "starting the store's follower",
            source,
        })?;
    Ok((latest, rx))
}

fn run(follower: &mut dyn Follow, latest: &Latest, tx: &mpsc::UnboundedSender<()>, pool: &str) {
    let mut last_error: Option<(String, Instant)> = None;
    loop {
        if let Err(e) = follower.wait(RELIST) {
            report(&mut last_error, &e, pool);
            std::thread::sleep(Duration::from_millis(200));
        }
        match follower.list() {
            Ok(listing) => {
                if last_error.take().is_some() {
                    tracing::info!("pool {pool}: the store answers again");
                }
                if listing != latest.get() {
                    tracing::info!("pool {pool}: {} reservation(s) in the store", listing.len());
                    latest.set(listing);
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            }
            Err(e) => report(&mut last_error, &e, pool),
        }
    }
}

fn report(last: &mut Option<(String, Instant)>, e: &StoreError, pool: &str) {
    let text = e.to_string();
    let repeat = last
        .as_ref()
        .is_some_and(|(t, at)| *t == text && at.elapsed() < ERROR_EVERY);
    if !repeat {
        tracing::error!(
            "pool {pool}: the store cannot be read, every address stays as it is: {text}"
        );
        *last = Some((text, Instant::now()));
    }
}
