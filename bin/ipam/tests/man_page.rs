//! The man pages in man/ are generated from the command-line definition; this test fails when
//! they have drifted. `UPDATE_MAN=1 cargo test -p ipam --test man_page` regenerates them.

use std::path::PathBuf;

use clap::CommandFactory;

#[test]
fn man_pages_match_the_cli() {
    let man_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../man");
    let stale = ipi_lab::man::check(&ipam::cli::Cli::command(), &man_dir);
    assert!(
        stale.is_empty(),
        "man pages out of step with the CLI: {stale:?}; run UPDATE_MAN=1 cargo test -p ipam --test man_page"
    );
}
