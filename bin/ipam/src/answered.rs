//! Reservations that ask the wire first (`--probe IF`): an address just taken is probed
//! (`ipi_core::acd`), and one that another host answers for is not handed out but kept in
//! the store under the holder [`holder`] (`answered/ADDRESS`), so that no later request is
//! offered it until someone who knows runs `ipam release answered/ADDRESS`.
//!
//! Only an address this request has just taken is probed: one it held already (the same
//! request again) or shares under a sharing key is in use by its own holder, and answers.

use std::net::IpAddr;

use ipi_core::acd::{self, Mac};
use ipi_store::store::{Record, Store};

use crate::alloc::{self, AllocError, Held, Pool};

/// Asks the wire about one address: the MAC of a host that answered for it, if one did.
pub type Check<'a> = dyn FnMut(IpAddr) -> Result<Option<Mac>, acd::Error> + 'a;

/// The store's holder of an address answered on the wire.
pub fn holder(ip: IpAddr) -> String {
    format!("answered/{ip}")
}

/// [`alloc::reserve`], moving past addresses that `check` finds answered (each marked in the
/// store). A fixed address that is answered is refused (and marked).
pub fn reserve(
    store: &mut dyn Store,
    pool: &Pool,
    owner: &str,
    fixed: Option<IpAddr>,
    check: &mut Check,
) -> Result<Held, AllocError> {
    loop {
        let held = alloc::reserve(store, pool, owner, fixed)?;
        if !held.new {
            return Ok(held);
        }
        let Some(mac) = check(held.ip)? else {
            return Ok(held);
        };
        mark(store, pool, owner, held.ip)?;
        if fixed.is_some() {
            return Err(AllocError::Refused {
                pool: pool.name.clone(),
                ip: held.ip,
                why: format!(
                    "it is in use on the wire (answered by {}); marked {}",
                    acd::mac_string(mac),
                    holder(held.ip)
                ),
            });
        }
    }
}

/// [`alloc::share`], moving past answered addresses when the key takes a new one.
pub fn share(
    store: &mut dyn Store,
    pool: &Pool,
    key: &str,
    name: &str,
    check: &mut Check,
) -> Result<Held, AllocError> {
    loop {
        let fresh = store.owned(&pool.name, key)?.is_none();
        let held = alloc::share(store, pool, key, name)?;
        if !fresh || check(held.ip)?.is_none() {
            return Ok(held);
        }
        mark(store, pool, key, held.ip)?;
    }
}

/// Hands `ip`, just taken by `owner`, to [`holder`]; losing a race to change it is fine (then
/// it is someone else's and the search goes on).
fn mark(store: &mut dyn Store, pool: &Pool, owner: &str, ip: IpAddr) -> Result<(), AllocError> {
    if let Some((held, record)) = store.owned(&pool.name, owner)? {
        if held == ip {
            store.replace(&pool.name, ip, &record, &Record::owned_by(&holder(ip)))?;
        }
    }
    Ok(())
}
