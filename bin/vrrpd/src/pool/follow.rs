//! The store followed by a task on the daemon's runtime (the follower's waits and etcd requests
//! are futures; the file store's listings, which wait for its lock, run on the runtime's
//! blocking threads), so the event loop never waits for the store. Each new listing is kept in
//! [`Latest`] and announced on a channel; the daemon then reloads, building its configuration
//! from the latest listing. A store that cannot be read is logged and the last good listing
//! stays: nothing held is dropped because the store is away.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use ipi_store::store::follow::Follower;
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

/// Follows `pool` in the store `url` on the runtime this is called on: the first listing is
/// made before this returns (a store that cannot be read is an error then), later ones by a
/// task that sends `()` on the channel after each listing that differs.
pub async fn start(
    url: &str,
    pool: &str,
) -> Result<(Latest, mpsc::UnboundedReceiver<()>), StoreError> {
    let mut follower = ipi_store::store::follow::follow(url, pool).await?;
    let latest = Latest::default();
    latest.set(follower.list().await?);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(run(follower, latest.clone(), tx, pool.to_owned()));
    Ok((latest, rx))
}

async fn run(mut follower: Follower, latest: Latest, tx: mpsc::UnboundedSender<()>, pool: String) {
    let pool = pool.as_str();
    let mut last_error: Option<(String, Instant)> = None;
    loop {
        if let Err(e) = follower.wait(RELIST).await {
            report(&mut last_error, &e, pool);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match follower.list().await {
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
