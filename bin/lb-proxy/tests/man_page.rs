//! The man pages in man/ and the shell completions in contrib/completions/ are generated from the
//! command-line definition; this test fails when they have drifted.
//! `UPDATE_MAN=1 cargo test -p lb-proxy --test man_page` regenerates the man pages,
//! `UPDATE_COMPLETIONS=1 cargo test -p lb-proxy --test man_page` the completions.

use std::path::PathBuf;

use clap::CommandFactory;

#[test]
fn man_pages_match_the_cli() {
    let man_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../man");
    let stale = ipi_lab::man::check(&lb_proxy::cli::Cli::command(), &man_dir);
    assert!(
        stale.is_empty(),
        "man pages out of step with the CLI: {stale:?}; run UPDATE_MAN=1 cargo test -p lb-proxy --test man_page"
    );
}

#[test]
fn completions_match_the_cli() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contrib/completions");
    let stale = ipi_lab::completions::check(&lb_proxy::cli::Cli::command(), &dir);
    assert!(
        stale.is_empty(),
        "shell completions out of step with the CLI: {stale:?}; run UPDATE_COMPLETIONS=1 cargo test -p lb-proxy --test man_page"
    );
}
