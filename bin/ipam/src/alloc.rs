//! The allocator: reserves and releases addresses of a [`Space`](ipi_store::range::Space) in a [`Store`], for every kind
//! of request (IPSet networks, MetalLB pools, CNI ranges).
//!
//! It never hands an address out twice because it never decides alone: an address is taken only
//! by a [`Store::claim`] that succeeds on a free address, and a record is changed or removed only
//! if it is still what was read. On the file store nothing races (the store is locked); on etcd
//! another machine may win a claim, and the search simply goes on to the next address.
//!
//! A search starts where the pool's `next` hint says and wraps around once, so one more
//! allocation in a large, full pool costs about as much as the first. How the hint moves is
//! the pool's [`Order`].

use std::collections::HashSet;
use std::net::IpAddr;

use ipi_store::range::{from_u128, to_u128, Span};
pub use ipi_store::range::{Order, Pool};
use ipi_store::store::{Record, Store, StoreError};

/// How far a lost race is retried before the command gives up.
const RACE_RETRIES: usize = 64;

/// A request that cannot be met; the store is as it was.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    /// Every address the pool may hand out is taken.
    #[error("{pool}: no free address left in {space}")]
    Exhausted {
        /// The pool.
        pool: String,
        /// Its ranges.
        space: String,
    },
    /// A fixed address the pool must not hand out.
    #[error("{pool}: {ip} cannot be reserved: {why}")]
    Refused {
        /// The pool.
        pool: String,
        /// The address asked for.
        ip: IpAddr,
        /// Why not.
        why: String,
    },
    /// A fixed address someone else holds.
    #[error("{pool}: {ip} is already reserved for {holder}")]
    Taken {
        /// The pool.
        pool: String,
        /// The address asked for.
        ip: IpAddr,
        /// Who holds it.
        holder: String,
    },
    /// Other machines kept changing the same records.
    #[error(
        "{pool}: gave up after {RACE_RETRIES} conflicting changes by other machines; try again"
    )]
    Contended {
        /// The pool.
        pool: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The wire could not be asked (`--probe`).
    #[error("probe: {0}")]
    Probe(#[from] ipi_core::acd::Error),
}

/// An address held after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The address.
    pub ip: IpAddr,
    /// Whether this request took it (false: it was held already, and is the same answer again).
    pub new: bool,
}

/// Reserves an address of `pool` for `owner`: the one it holds already, else `fixed` if given
/// (when the pool may hand it out and no one holds it), else the first free one in the pool's
/// order. A held address is moved to `fixed` when they differ, and to a new one when the pool
/// may no longer hand it out (its configuration changed: a range, an exclusion), as host-local
/// does; the old one is freed once the new one is held.
pub fn reserve(
    store: &mut dyn Store,
    pool: &Pool,
    owner: &str,
    fixed: Option<IpAddr>,
) -> Result<Held, AllocError> {
    reserve_as(store, pool, &Record::owned_by(owner), fixed)
}

/// [`reserve`] for `holder.owner`, a new reservation holding `holder` (its node, pod and time).
pub fn reserve_as(
    store: &mut dyn Store,
    pool: &Pool,
    holder: &Record,
    fixed: Option<IpAddr>,
) -> Result<Held, AllocError> {
    let owner = holder.owner.as_str();
    let held = store.owned(&pool.name, owner)?;
    if let Some((ip, _)) = &held {
        let allowed = pool.space.refusal(*ip).is_none();
        if allowed && fixed.is_none_or(|f| f == *ip) {
            return Ok(Held {
                ip: *ip,
                new: false,
            });
        }
    }
    let ip = match fixed {
        Some(ip) => claim_fixed(store, pool, ip, holder)?,
        None => search(store, pool, holder)?,
    };
    if let Some((old, old_record)) = held {
        // The request now names another address: the old one goes once the new one is held.
        free_exactly(store, pool, old, &old_record)?;
    }
    Ok(Held { ip, new: true })
}

/// Reserves an address of `pool` for request `name` sharing key `key`: every request with the
/// same key gets the same address (MetalLB's `allow-shared-ip`).
pub fn share(
    store: &mut dyn Store,
    pool: &Pool,
    key: &str,
    name: &str,
) -> Result<Held, AllocError> {
    for _ in 0..RACE_RETRIES {
        match store.owned(&pool.name, key)? {
            Some((ip, record)) if record.names.iter().any(|n| n == name) => {
                return Ok(Held { ip, new: false })
            }
            Some((ip, record)) => {
                let mut new = record.clone();
                new.names.push(name.to_owned());
                new.names.sort();
                if store.replace(&pool.name, ip, &record, &new)? {
                    return Ok(Held { ip, new: true });
                }
            }
            None => {
                let record = Record {
                    owner: key.to_owned(),
                    names: vec![name.to_owned()],
                    ..Record::default()
                };
                let ip = search(store, pool, &record)?;
                return Ok(Held { ip, new: true });
            }
        }
    }
    Err(AllocError::Contended {
        pool: pool.name.clone(),
    })
}

/// Releases what `owner` holds in `pool`; `None` when it holds nothing (which is no error).
pub fn release(
    store: &mut dyn Store,
    pool: &Pool,
    owner: &str,
) -> Result<Option<IpAddr>, AllocError> {
    for _ in 0..RACE_RETRIES {
        let Some((ip, record)) = store.owned(&pool.name, owner)? else {
            return Ok(None);
        };
        if store.free(&pool.name, ip, &record)? {
            moved_back(store, &pool.name, pool.order, ip)?;
            return Ok(Some(ip));
        }
    }
    Err(AllocError::Contended {
        pool: pool.name.clone(),
    })
}

/// Releases request `name` everywhere in the store, whatever pool it is in (each pool's order
/// from [`Order::of_pool`]). Returns what was released, as (pool, address); an address shared
/// with other requests stays theirs.
pub fn release_name(
    store: &mut dyn Store,
    name: &str,
) -> Result<Vec<(String, IpAddr)>, AllocError> {
    let mut released = Vec::new();
    for pool in store.pools()? {
        for (ip, record) in store.list(&pool)? {
            if !record.holders().contains(&name) {
                continue;
            }
            let done = if record.names.len() > 1 {
                let mut rest = record.clone();
                rest.names.retain(|n| n != name);
                store.replace(&pool, ip, &record, &rest)?
            } else {
                let freed = store.free(&pool, ip, &record)?;
                if freed {
                    moved_back(store, &pool, Order::of_pool(&pool), ip)?;
                }
                freed
            };
            if !done {
                return Err(AllocError::Contended { pool });
            }
            released.push((pool.clone(), ip));
        }
    }
    Ok(released)
}

/// Frees `ip` if it still holds `record`; losing that race is fine (someone else freed it).
fn free_exactly(
    store: &mut dyn Store,
    pool: &Pool,
    ip: IpAddr,
    record: &Record,
) -> Result<(), AllocError> {
    if store.free(&pool.name, ip, record)? {
        moved_back(store, &pool.name, pool.order, ip)?;
    }
    Ok(())
}

/// After a release: a lowest-first pool starts its next search at the freed address.
fn moved_back(
    store: &mut dyn Store,
    pool: &str,
    order: Order,
    ip: IpAddr,
) -> Result<(), AllocError> {
    if order == Order::Lowest
        && store
            .next(pool)?
            .is_none_or(|next| to_u128(ip) < to_u128(next))
    {
        store.set_next(pool, ip)?;
    }
    Ok(())
}

fn claim_fixed(
    store: &mut dyn Store,
    pool: &Pool,
    ip: IpAddr,
    record: &Record,
) -> Result<IpAddr, AllocError> {
    if let Some(why) = pool.space.refusal(ip) {
        return Err(AllocError::Refused {
            pool: pool.name.clone(),
            ip,
            why,
        });
    }
    if store.claim(&pool.name, ip, record)? {
        return Ok(ip);
    }
    let holder = store
        .record(&pool.name, ip)?
        .map_or_else(|| "someone".to_owned(), |r| r.holders().join(", "));
    Err(AllocError::Taken {
        pool: pool.name.clone(),
        ip,
        holder,
    })
}

/// The spans a search walks: from the hint to the end, then from the start up to the hint.
fn walk(spans: &[Span], start: Option<IpAddr>) -> Vec<Span> {
    let Some((at, i)) =
        start.and_then(|s| spans.iter().position(|sp| sp.contains(s)).map(|i| (s, i)))
    else {
        return spans.to_vec();
    };
    let here = spans[i];
    let mut out = vec![Span {
        first: at,
        last: here.last,
    }];
    out.extend_from_slice(&spans[i + 1..]);
    out.extend_from_slice(&spans[..i]);
    if let Some(before) = to_u128(at)
        .checked_sub(1)
        .and_then(|b| from_u128(b, at))
        .filter(|b| here.contains(*b))
    {
        out.push(Span {
            first: here.first,
            last: before,
        });
    }
    out
}

/// Free addresses a search of a shared store claims from in one transaction: as many
/// processes as claim from the same ones at once each get one.
const CANDIDATES: usize = 16;

/// Reserved addresses a search of a shared store reads at a time.
const WINDOW: usize = 64;

/// What a search knows of the addresses from where it is: some free ones in order, and the
/// last address that knowledge covers.
struct Ahead {
    free: Vec<IpAddr>,
    seen_to: u128,
}

/// The free addresses of `span` from `from` on. A store no one else claims in is not read:
/// the next address the pool may hand out is the candidate, and its claim says whether it was
/// free. A shared store is read once for what is reserved ahead, so that claims go to
/// addresses that were free. `None` once the span has nothing left from `from`.
fn look_ahead(
    store: &mut dyn Store,
    pool: &Pool,
    span: &Span,
    from: u128,
) -> Result<Option<Ahead>, AllocError> {
    let Some(first) = pool.space.next_allowed(span, from) else {
        return Ok(None);
    };
    if !store.shared() {
        let seen_to = to_u128(first);
        return Ok(Some(Ahead {
            free: vec![first],
            seen_to,
        }));
    }
    let reserved = store.reserved(&pool.name, first, span.last, WINDOW)?;
    let seen_to = match reserved.last() {
        Some(last) if reserved.len() == WINDOW => to_u128(*last),
        _ => to_u128(span.last),
    };
    let taken: HashSet<u128> = reserved.iter().map(|ip| to_u128(*ip)).collect();
    let mut free = Vec::new();
    let mut at = to_u128(first);
    while free.len() < CANDIDATES && at <= seen_to {
        let Some(ip) = pool
            .space
            .next_allowed(span, at)
            .filter(|ip| to_u128(*ip) <= seen_to)
        else {
            break;
        };
        if !taken.contains(&to_u128(ip)) {
            free.push(ip);
        }
        match to_u128(ip).checked_add(1) {
            Some(n) => at = n,
            None => break,
        }
    }
    Ok(Some(Ahead { free, seen_to }))
}

/// Claims the first free address from the pool's hint on, and moves the hint past it. On a
/// shared store the claim goes to the first of the free addresses ahead that is still free
/// when it lands; should other processes have taken all of them meanwhile, what is free is
/// read again from the same place.
fn search(store: &mut dyn Store, pool: &Pool, record: &Record) -> Result<IpAddr, AllocError> {
    let start = store.next(&pool.name)?;
    let mut lost = 0;
    for span in walk(&pool.space.spans, start) {
        let mut from = to_u128(span.first);
        while let Some(ahead) = look_ahead(store, pool, &span, from)? {
            if let Some(ip) = store.claim_first(&pool.name, &ahead.free, record)? {
                return Ok(ip);
            }
            if !store.shared() || ahead.free.is_empty() {
                match ahead.seen_to.checked_add(1) {
                    Some(n) => from = n,
                    None => break,
                }
            } else if lost == RACE_RETRIES {
                return Err(AllocError::Contended {
                    pool: pool.name.clone(),
                });
            } else {
                lost += 1;
            }
        }
    }
    Err(AllocError::Exhausted {
        pool: pool.name.clone(),
        space: pool.space.describe(),
    })
}

#[cfg(test)]
mod tests {
    // What the allocator does with a store is tested once for every store, in
    // tests/common/behaviours.rs; here, what needs no store.
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_walk_starts_at_the_hint_and_wraps_once() {
        let spans = vec![
            Span::parse("192.0.2.10-192.0.2.20").unwrap(),
            Span::parse("192.0.2.30-192.0.2.40").unwrap(),
        ];
        let w = walk(&spans, Some(ip("192.0.2.15")));
        let text: Vec<String> = w.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "192.0.2.15-192.0.2.20",
                "192.0.2.30-192.0.2.40",
                "192.0.2.10-192.0.2.14"
            ]
        );
        assert_eq!(walk(&spans, Some(ip("192.0.2.25"))), spans);
        assert_eq!(walk(&spans, Some(ip("192.0.2.10"))).len(), 2);
    }
}
