//! The process's descriptors for forwarded connections, counted (`daemon::admit` sets the
//! budget at start from the open-file limit, less a reserve). A connection takes its two (the
//! client's socket and the server's) when it is admitted, and what it may want later only
//! while the budget has it: a pipe pair to splice through (without one it copies through user
//! space), a second server socket to race (without one it waits on its one attempt). What the
//! budget leaves out stays for the health checks, the DNS, the monitor and the stats page,
//! whatever the clients do.

use std::sync::{Arc, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Descriptors an admitted connection holds: the client's socket and the server's.
pub const PER_CONNECTION: u32 = 2;

static BUDGET: OnceLock<Arc<Semaphore>> = OnceLock::new();

/// Makes the budget `descriptors`; false when one was set (or used) before, which then stays.
pub fn set(descriptors: usize) -> bool {
    BUDGET
        .set(Arc::new(Semaphore::new(
            descriptors.min(Semaphore::MAX_PERMITS),
        )))
        .is_ok()
}

/// The budget: unbounded until [`set`] (what forwards without `run`: tests, benchmarks).
pub fn budget() -> &'static Arc<Semaphore> {
    BUDGET.get_or_init(|| Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)))
}

/// `n` descriptors for an extra, held until the permit is dropped; None when the budget has
/// not got them.
pub fn extra(n: u32) -> Option<OwnedSemaphorePermit> {
    Arc::clone(budget()).try_acquire_many_owned(n).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_come_only_from_what_is_left() {
        // The process-wide budget, as `run` sets it: tests share the process, so this one
        // sets it and checks through the budget itself.
        let small = Arc::new(Semaphore::new(5));
        let taken = Arc::clone(&small).try_acquire_many_owned(4).unwrap();
        assert!(
            Arc::clone(&small).try_acquire_many_owned(2).is_err(),
            "only 1 left"
        );
        drop(taken);
        assert!(Arc::clone(&small).try_acquire_many_owned(2).is_ok());
        // Unset, the budget never says no.
        assert!(extra(2).is_some());
    }
}
