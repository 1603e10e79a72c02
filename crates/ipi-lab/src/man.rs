//! Man pages generated from a program's clap definition, checked in man/: the test every
//! program runs so that `--help` and the man pages never drift apart.

use std::path::Path;

/// Compares `man/PROGRAM.1` and `man/PROGRAM-SUBCOMMAND[-SUBCOMMAND...].1` with what
/// clap_mangen renders from `top`; with `UPDATE_MAN` set in the environment (not under CI:
/// [`crate::updating`]), writes them instead. Returns the stale pages (empty when all match).
pub fn check(top: &clap::Command, man_dir: &Path) -> Vec<String> {
    let program = top.get_name().to_string();
    let version = top.get_version().unwrap_or_default().to_owned();
    let mut pages = vec![(program.clone(), top.clone())];
    // Every subcommand at every depth gets a page of its own (`ipam-pool-reserve.1`): the page
    // of a command with subcommands only lists them, so their options would be nowhere else.
    let mut todo: Vec<(String, clap::Command)> = vec![(program, top.clone())];
    while let Some((name, command)) = todo.pop() {
        for sub in command.get_subcommands() {
            let sub_name = format!("{name}-{}", sub.get_name());
            let page = sub.clone().name(sub_name.clone()).version(version.clone());
            pages.push((sub_name.clone(), page));
            todo.push((sub_name, sub.clone()));
        }
    }
    let update = crate::updating("UPDATE_MAN");
    let mut stale = Vec::new();
    for (name, command) in pages {
        let mut rendered = Vec::new();
        if clap_mangen::Man::new(command)
            .render(&mut rendered)
            .is_err()
        {
            stale.push(format!("{name}: cannot render"));
            continue;
        }
        let path = man_dir.join(format!("{name}.1"));
        if update {
            if let Err(e) = std::fs::write(&path, &rendered) {
                stale.push(format!("{}: {e}", path.display()));
            }
        } else if std::fs::read(&path).ok().as_deref() != Some(rendered.as_slice()) {
            stale.push(path.display().to_string());
        }
    }
    stale
}

/// The tests every program runs on its generated documentation: its man pages ([`check`]) and
/// its shell completions ([`crate::completions::check`]) match its command line. In a program's
/// `tests/man_page.rs`: `ipi_lab::documentation_tests!(vrrpd::cli::Cli, "vrrpd");`.
/// `UPDATE_MAN=1` / `UPDATE_COMPLETIONS=1` regenerate them.
#[macro_export]
macro_rules! documentation_tests {
    ($cli:ty, $package:literal) => {
        fn top_directory() -> ::std::path::PathBuf {
            ::std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
        }

        #[test]
        fn man_pages_match_the_cli() {
            let command = <$cli as ::clap::CommandFactory>::command();
            let stale = $crate::man::check(&command, &top_directory().join("man"));
            assert!(
                stale.is_empty(),
                "man pages out of step with the CLI: {stale:?}; run UPDATE_MAN=1 cargo test -p {} --test man_page",
                $package
            );
        }

        #[test]
        fn completions_match_the_cli() {
            let command = <$cli as ::clap::CommandFactory>::command();
            let dir = top_directory().join("contrib/completions");
            let stale = $crate::completions::check(&command, &dir);
            assert!(
                stale.is_empty(),
                "shell completions out of step with the CLI: {stale:?}; run UPDATE_COMPLETIONS=1 cargo test -p {} --test man_page",
                $package
            );
        }
    };
}
