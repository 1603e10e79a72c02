//! The lower-priority keywords: keepalived's `garp_lower_prio_repeat` / `garp_lower_prio_delay`
//! (and their `vrrp_` global defaults) and vrrpd's `preempt_on_lower_priority`: read with
//! keepalived's defaults, written back by `render`'s writer, and refused with file:line.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use vrrpd::config::{self, write};

fn instance(body: &str) -> String {
    format!(
        "vrrp_instance VI {{\n    interface eth0\n    virtual_router_id 7\n{body}    \
         virtual_ipaddress {{\n        192.0.2.100\n    }}\n}}\n"
    )
}

#[test]
fn defaults_are_keepalived_s_the_global_master_burst() {
    let c = config::parse_str(&instance(""), "a.conf").unwrap();
    let g = c.instances[0].garp;
    assert_eq!((g.lower_prio_repeat, g.lower_prio_delay_cs), (5, 500));
    assert!(!c.instances[0].preempt_on_lower_priority);

    // Unset, the global lower-priority pair follows the global master pair, wherever in
    // global_defs it is written; an instance's own garp_master_* does not move it.
    let text = format!(
        "global_defs {{\n    vrrp_garp_master_repeat 3\n    vrrp_garp_master_delay 2\n}}\n{}",
        instance("    garp_master_repeat 9\n")
    );
    let c = config::parse_str(&text, "a.conf").unwrap();
    let g = c.instances[0].garp;
    assert_eq!((g.master_repeat, g.master_delay_cs), (9, 200));
    assert_eq!((g.lower_prio_repeat, g.lower_prio_delay_cs), (3, 200));
}

#[test]
fn global_and_instance_keywords_are_read_and_written_back() {
    let text = format!(
        "global_defs {{\n    vrrp_garp_lower_prio_repeat 2\n    vrrp_garp_lower_prio_delay 1.5\n    \
         vrrp_preempt_on_lower_priority\n}}\n{}{}",
        instance("    garp_lower_prio_repeat 0\n"),
        instance("    preempt_on_lower_priority off\n    garp_lower_prio_delay 0\n")
            .replace("VI", "VJ")
            .replace("virtual_router_id 7", "virtual_router_id 8"),
    );
    let c = config::parse_str(&text, "a.conf").unwrap();
    assert!(c.global.preempt_on_lower_priority);
    let (vi, vj) = (&c.instances[0], &c.instances[1]);
    assert_eq!(
        (vi.garp.lower_prio_repeat, vi.garp.lower_prio_delay_cs),
        (0, 150)
    );
    assert_eq!(
        (vj.garp.lower_prio_repeat, vj.garp.lower_prio_delay_cs),
        (2, 0)
    );
    assert!(vi.preempt_on_lower_priority && !vj.preempt_on_lower_priority);

    let written = write::write(&c);
    for line in [
        "    vrrp_preempt_on_lower_priority\n",
        "    vrrp_garp_lower_prio_delay 1.50\n",
        "    vrrp_garp_lower_prio_repeat 2\n",
        "    garp_lower_prio_repeat 0\n",
        "    garp_lower_prio_delay 0\n",
        "    preempt_on_lower_priority off\n",
    ] {
        assert!(written.contains(line), "missing {line:?} in:\n{written}");
    }
    let again = config::parse_str(&written, "written.conf").unwrap();
    assert_eq!(again.global, c.global);
    for (a, b) in again.instances.iter().zip(&c.instances) {
        assert_eq!(
            (a.garp, a.preempt_on_lower_priority),
            (b.garp, b.preempt_on_lower_priority)
        );
    }
    // Defaults are left out.
    let plain = config::parse_str(&instance(""), "a.conf").unwrap();
    let w = write::write(&plain);
    assert!(
        !w.contains("lower_prio") && !w.contains("preempt_on"),
        "{w}"
    );
    let on = config::parse_str(&instance("    preempt_on_lower_priority\n"), "a.conf").unwrap();
    assert!(write::write(&on).contains("    preempt_on_lower_priority on\n"));
}

#[test]
fn bad_values_are_refused_with_file_and_line() {
    let text = format!(
        "global_defs {{\n    vrrp_garp_lower_prio_repeat -1\n    vrrp_preempt_on_lower_priority maybe\n}}\n{}",
        instance(
            "    garp_lower_prio_repeat 256\n    garp_lower_prio_delay 0.001\n    \
             preempt_on_lower_priority yes\n"
        )
    );
    let errors = config::parse_str(&text, "bad.conf")
        .unwrap_err()
        .to_string();
    for want in [
        "bad.conf:2: `vrrp_garp_lower_prio_repeat -1`: must be a whole number from 0 to 255",
        "bad.conf:3: `vrrp_preempt_on_lower_priority` takes nothing, or true/false/on/off",
        "bad.conf:8: `garp_lower_prio_repeat 256`: must be a whole number from 0 to 255",
        "bad.conf:9: `garp_lower_prio_delay 0.001`: must be seconds with at most two decimals",
        "bad.conf:10: `preempt_on_lower_priority` takes nothing, or true/false/on/off",
    ] {
        assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
    }
}
