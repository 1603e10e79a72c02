//! `lab-demo`: the keepalived lab demo. Two hosts in network namespaces run the real keepalived
//! in one VRRP group; the master's link is cut, the backup takes the VIP, the link comes back.
//! Prints the timeline; `--keep DIR` keeps the capture of every advert as DIR/vrrp.pcap (the
//! demo script decodes it with `vrrpd watch`). Ctrl-C tears everything down.

use std::path::PathBuf;
use std::process::ExitCode;

use ipi_net_tests::failover::{self, Fault};
use ipi_net_tests::vrrp::{Group, Speaker};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut keep = None;
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--keep", Some(dir)) => keep = Some(PathBuf::from(dir)),
            _ => {
                eprintln!("usage: lab-demo [--keep DIR]");
                return ExitCode::from(2);
            }
        }
    }
    if !ipi_lab::has_net_admin() {
        eprintln!("lab-demo: needs CAP_NET_ADMIN to build network namespaces: run it as root");
        return ExitCode::from(1);
    }
    match Signals::new([SIGINT, SIGTERM]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    eprintln!("\ninterrupted: tearing the lab down");
                    ipi_lab::teardown_all();
                    std::process::exit(130);
                }
            });
        }
        Err(e) => eprintln!("lab-demo: Ctrl-C will not clean up: {e}"),
    }
    let group = Group::v2_pass();
    println!(
        "VRRPv2, VRID {}, advert_int 1 s, PASS authentication, VIP {}\n",
        group.vrid,
        group.vips()[0]
    );
    let outcome = failover::run(
        &group,
        [Speaker::Keepalived, Speaker::Keepalived],
        Fault::Partition,
        None,
        &mut |at, line| println!("{:7.3} s  {line}", at.as_secs_f64()),
    );
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("lab-demo: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "\nfailover: the backup held the VIP {:.3} s after the cut; on the wire it stayed silent \
         {} after the master's last advert; Master_Down_Interval = 3 x 1 s + (256 - 100)/256 s \
         = {:.3} s",
        outcome.failover.as_secs_f64(),
        outcome.silence.map_or_else(
            || "(not captured)".to_string(),
            |s| format!("{:.3} s", s.as_secs_f64())
        ),
        outcome.master_down_interval.as_secs_f64()
    );
    if let Some(dir) = keep {
        let to = dir.join("vrrp.pcap");
        if let Err(e) =
            std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&to, &outcome.pcap))
        {
            eprintln!("lab-demo: keep the capture as {}: {e}", to.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
