//! `notify_fifo`, `vrrp_notify_fifo`, their `..._script` and `fifo_write_vrrp_states_on_reload`
//! in global_defs.

use super::args::{command_words, no_args, one};
use crate::config::error::Found;
use crate::config::model::{Command, GlobalDefs, NotifyFifo, User};
use crate::config::tree::Node;

/// The FIFO keywords vrrpd reads (keepalived's `lvs_notify_fifo` is LVS's, set aside).
const FIFOS: [&str; 2] = ["notify_fifo", "vrrp_notify_fifo"];

/// Reads `n` if it is a FIFO keyword or its script. False when it is neither.
pub(super) fn fifo(n: &Node, g: &mut GlobalDefs, errors: &mut Found) -> bool {
    if n.keyword == "fifo_write_vrrp_states_on_reload" {
        g.fifo_states_on_reload = no_args(n, errors);
        return true;
    }
    let (keyword, script) = match n.keyword.strip_suffix("_script") {
        Some(k) if FIFOS.contains(&k) => (k, true),
        _ if FIFOS.contains(&n.keyword.as_str()) => (n.keyword.as_str(), false),
        _ => return false,
    };
    let at = match g.notify_fifos.iter().position(|f| f.keyword == keyword) {
        Some(at) => at,
        None => {
            g.notify_fifos.push(NotifyFifo {
                keyword: keyword.to_string(),
                path: Default::default(),
                script: None,
                location: n.location.clone(),
            });
            g.notify_fifos.len() - 1
        }
    };
    let entry = &mut g.notify_fifos[at];
    if script {
        entry.script = reader(n, errors);
    } else if let Some(path) = one(n, errors) {
        entry.path = path.into();
        entry.location = n.location.clone();
    }
    true
}

/// `..._script COMMAND [USER [GROUP]]`: the command is one value (quoted when it has words).
fn reader(n: &Node, errors: &mut Found) -> Option<(Command, Option<User>)> {
    let Some((text, who)) = n.args.split_first().filter(|_| n.block.is_none()) else {
        errors.push(
            &n.location,
            format!(
                "`{}` takes a command and an optional user and group",
                n.keyword
            ),
        );
        return None;
    };
    let words = match command_words(text) {
        Ok(words) => words,
        Err(e) => {
            errors.push(&n.location, format!("`{}`: {e}", n.keyword));
            return None;
        }
    };
    let user = match who {
        [] => None,
        [user] => Some(User {
            user: user.clone(),
            group: None,
        }),
        [user, group] => Some(User {
            user: user.clone(),
            group: Some(group.clone()),
        }),
        _ => {
            errors.push(
                &n.location,
                format!(
                    "`{}`: at most a user and a group after the command",
                    n.keyword
                ),
            );
            return None;
        }
    };
    let command = Command {
        words,
        location: n.location.clone(),
    };
    Some((command, user))
}

/// A script named for a FIFO that is not: an error at the script's line.
pub(super) fn check(g: &GlobalDefs, errors: &mut Found) {
    for f in g
        .notify_fifos
        .iter()
        .filter(|f| f.path.as_os_str().is_empty())
    {
        errors.push(
            &f.location,
            format!("`{0}_script` needs `{0}` (the FIFO it reads)", f.keyword),
        );
    }
}
