//! The values keepalived.conf's statements take, read the way keepalived reads them: one value,
//! numbers, durations, addresses, weights, command lines, users; the GARP and notify keywords
//! that instances and global_defs share. Each reader records its problems with the line.

use std::net::IpAddr;

use crate::config::error::Found;
use crate::config::model::{Command, Notify, User};
use crate::config::tree::Node;
use crate::fsm::GarpParams;

/// A keyword vrrpd does not read here: keepalived's (refused, with the reason where there
/// is one), or unknown to keepalived too.
pub(super) fn unknown(node: &Node, within: &str, errors: &mut Found) {
    let message = match crate::config::known::refusal(&node.keyword) {
        Some(why) => format!("{why} (in {within})"),
        None => format!("unknown keyword `{}` in {within}", node.keyword),
    };
    errors.push(&node.location, message);
}

/// The one argument of `node`. More are keepalived's to ignore (it reads the first word
/// after the keyword and no further): vrrpd takes the first too, with a warning.
pub(super) fn one<'a>(node: &'a Node, errors: &mut Found) -> Option<&'a str> {
    match node.args.as_slice() {
        [arg] if node.block.is_none() => Some(arg),
        [arg, rest @ ..] if node.block.is_none() => {
            errors.warn(
                &node.location,
                format!(
                    "`{}` takes one value: `{arg}` is read and `{}` ignored, as keepalived does",
                    node.keyword,
                    rest.join(" ")
                ),
            );
            Some(arg)
        }
        _ => {
            errors.push(&node.location, format!("`{}` needs a value", node.keyword));
            None
        }
    }
}

pub(super) fn no_args(node: &Node, errors: &mut Found) -> bool {
    if node.args.is_empty() && node.block.is_none() {
        return true;
    }
    errors.push(&node.location, format!("`{}` takes no value", node.keyword));
    false
}

pub(super) fn block<'a>(node: &'a Node, errors: &mut Found) -> &'a [Node] {
    match &node.block {
        Some(children) if node.args.is_empty() || node.keyword == "vrrp_script" => children,
        Some(children) => children,
        None => {
            errors.push(
                &node.location,
                format!("`{}` needs a `{{ ... }}` block", node.keyword),
            );
            &[]
        }
    }
}

pub(super) fn number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    node: &Node,
    range: std::ops::RangeInclusive<T>,
    errors: &mut Found,
) -> Option<T> {
    let text = one(node, errors)?;
    match text.parse::<T>() {
        Ok(v) if range.contains(&v) => Some(v),
        _ => {
            errors.push(
                &node.location,
                format!(
                    "`{} {text}`: must be a whole number from {} to {}",
                    node.keyword,
                    range.start(),
                    range.end()
                ),
            );
            None
        }
    }
}

/// Decimal seconds (`1`, `0.1`, `2.50`) in centiseconds.
pub fn centiseconds(text: &str) -> Option<u32> {
    decimal(text, 2)
}

/// Decimal seconds (`0.001`, `1.5`) in microseconds.
pub fn microseconds(text: &str) -> Option<u32> {
    decimal(text, 6)
}

/// A decimal number in units of 10^-`digits` (more decimals only when they are zeros).
pub(super) fn decimal(text: &str, digits: usize) -> Option<u32> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > digits && frac[digits..].bytes().any(|b| b != b'0')
    {
        return None;
    }
    let whole: u32 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let frac = format!("{frac:0<digits$}");
    let frac: u32 = if digits == 0 {
        0
    } else {
        frac[..digits].parse().ok()?
    };
    whole
        .checked_mul(10u32.checked_pow(u32::try_from(digits).ok()?)?)?
        .checked_add(frac)
}

pub(super) fn seconds_cs(node: &Node, max_cs: u32, errors: &mut Found) -> Option<u32> {
    let text = one(node, errors)?;
    match centiseconds(text) {
        Some(cs) if cs <= max_cs => Some(cs),
        _ => {
            errors.push(
                &node.location,
                format!(
                    "`{} {text}`: must be seconds with at most two decimals, at most {}",
                    node.keyword,
                    max_cs / 100
                ),
            );
            None
        }
    }
}

/// A router's own or its peer's address (`unicast_src_ip`, `mcast_src_ip`, a unicast peer).
/// keepalived reads `ADDR/LEN` there as ADDR, silently: vrrpd reads it so too, and says so.
pub(super) fn host_address(
    node: &Node,
    what: &str,
    text: &str,
    errors: &mut Found,
) -> Option<IpAddr> {
    let Some((addr, len)) = text.split_once('/') else {
        return address(node, text, errors);
    };
    let a = address(node, addr, errors)?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    if !len.parse::<u8>().is_ok_and(|l| l <= max) {
        errors.push(
            &node.location,
            format!("`{what}`: `{text}`: the prefix length must be 0 to {max}"),
        );
        return None;
    }
    errors.warn(
        &node.location,
        format!(
            "`{what}`: `{text}` is read as the address {a}, its prefix length ignored, as \
             keepalived does"
        ),
    );
    Some(a)
}

pub(super) fn address(node: &Node, text: &str, errors: &mut Found) -> Option<IpAddr> {
    match text.parse() {
        Ok(a) => Some(a),
        Err(_) => {
            errors.push(
                &node.location,
                format!("`{}`: `{text}` is not an IP address", node.keyword),
            );
            None
        }
    }
}

/// An entry's `weight N` after its name, within `range`; keepalived's `reverse` is refused.
pub(super) fn weight(
    node: &Node,
    args: &[String],
    range: std::ops::RangeInclusive<i32>,
    errors: &mut Found,
) -> Option<i32> {
    match args {
        [] => None,
        [kw, w] if kw == "weight" => match w.parse::<i32>() {
            Ok(w) if range.contains(&w) => Some(w),
            _ => {
                errors.push(
                    &node.location,
                    format!(
                        "`{}`: weight `{w}` must be from {} to {}",
                        node.keyword,
                        range.start(),
                        range.end()
                    ),
                );
                None
            }
        },
        _ => {
            let reverse = if args.iter().any(|a| a == "reverse") {
                " (`reverse` is not supported by vrrpd)"
            } else {
                ""
            };
            errors.push(
                &node.location,
                format!(
                    "`{} {}`: only `weight N` may follow the name{reverse}",
                    node.keyword,
                    args.join(" ")
                ),
            );
            None
        }
    }
}

/// Why a command line has no program to run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The words cannot be split (ipi-core's message: an unclosed quote).
    #[error("{0}")]
    Words(String),
    /// No word at all.
    #[error("the command is empty")]
    Empty,
}

/// A command line as keepalived splits it: the words of the (quoted) string, where single or
/// double quotes group words and a backslash escapes the next character. No shell runs it.
pub fn command_words(text: &str) -> Result<Vec<String>, CommandError> {
    let words = ipi_core::place::words(text, None).map_err(CommandError::Words)?;
    if words.is_empty() {
        return Err(CommandError::Empty);
    }
    Ok(words)
}

pub(super) fn command(node: &Node, errors: &mut Found) -> Option<Command> {
    if node.block.is_some() || node.args.is_empty() {
        errors.push(
            &node.location,
            format!("`{}` takes a command line", node.keyword),
        );
        return None;
    }
    match command_words(&node.args.join(" ")) {
        Ok(words) => Some(Command {
            words,
            location: node.location.clone(),
        }),
        Err(e) => {
            errors.push(&node.location, format!("`{}`: {e}", node.keyword));
            None
        }
    }
}

pub(super) fn user(node: &Node, errors: &mut Found) -> Option<User> {
    match node.args.as_slice() {
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
                &node.location,
                format!("`{}` takes a user and an optional group", node.keyword),
            );
            None
        }
    }
}

/// The GARP keywords shared by global_defs (`vrrp_` prefix) and instances.
pub(super) fn garp(node: &Node, keyword: &str, garp: &mut GarpParams, errors: &mut Found) -> bool {
    match keyword {
        "garp_master_delay" => {
            garp.master_delay_cs = seconds_cs(node, 100_000, errors).unwrap_or(garp.master_delay_cs)
        }
        "garp_master_repeat" => {
            garp.master_repeat = number(node, 1..=255, errors).unwrap_or(garp.master_repeat)
        }
        "garp_master_refresh" => {
            garp.master_refresh_cs =
                seconds_cs(node, 100_000, errors).unwrap_or(garp.master_refresh_cs)
        }
        "garp_master_refresh_repeat" => {
            garp.master_refresh_repeat =
                number(node, 1..=255, errors).unwrap_or(garp.master_refresh_repeat)
        }
        "garp_lower_prio_delay" => {
            garp.lower_prio_delay_cs =
                seconds_cs(node, 100_000, errors).unwrap_or(garp.lower_prio_delay_cs)
        }
        "garp_lower_prio_repeat" => {
            garp.lower_prio_repeat = number(node, 0..=255, errors).unwrap_or(garp.lower_prio_repeat)
        }
        _ => return false,
    }
    true
}

pub(super) fn notify(node: &Node, notify: &mut Notify, errors: &mut Found) -> bool {
    let slot = match node.keyword.as_str() {
        "notify_master" => &mut notify.master,
        "notify_backup" => &mut notify.backup,
        "notify_fault" => &mut notify.fault,
        "notify_stop" => &mut notify.stop,
        "notify" => &mut notify.any,
        _ => return false,
    };
    *slot = command(node, errors);
    true
}

pub(super) fn name(node: &Node, errors: &mut Found) -> Option<String> {
    match node.args.as_slice() {
        [name] => Some(name.clone()),
        _ => {
            errors.push(
                &node.location,
                format!("`{}` takes one name before its block", node.keyword),
            );
            None
        }
    }
}

/// A switch as keepalived writes `lower_prio_no_advert`: alone it means on, or
/// true/false/on/off.
pub(super) fn flag(n: &Node, errors: &mut Found) -> bool {
    match n.args.as_slice() {
        [] if n.block.is_none() => true,
        [v] if n.block.is_none() && (v == "true" || v == "on") => true,
        [v] if n.block.is_none() && (v == "false" || v == "off") => false,
        _ => {
            errors.push(
                &n.location,
                format!("`{}` takes nothing, or true/false/on/off", n.keyword),
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_to_centiseconds() {
        assert_eq!(centiseconds("1"), Some(100));
        assert_eq!(centiseconds("0.1"), Some(10));
        assert_eq!(centiseconds(".5"), Some(50));
        assert_eq!(centiseconds("2.50"), Some(250));
        assert_eq!(centiseconds("0.100"), Some(10));
        assert_eq!(centiseconds("0.001"), None);
        assert_eq!(centiseconds("x"), None);
        assert_eq!(centiseconds(""), None);
        assert_eq!(centiseconds("-1"), None);
    }

    #[test]
    fn commands_split_like_keepalived() {
        assert_eq!(
            command_words("/usr/bin/timeout 1.9 /etc/keepalived/chk.sh").unwrap(),
            ["/usr/bin/timeout", "1.9", "/etc/keepalived/chk.sh"]
        );
        assert_eq!(
            command_words(r#"/bin/echo 'a b' "c d" e\ f"#).unwrap(),
            ["/bin/echo", "a b", "c d", "e f"]
        );
        assert!(command_words("'open").is_err());
        assert!(command_words("   ").is_err());
    }
}
