//! The man pages in man/ and the shell completions in contrib/completions/ are generated from the
//! command-line definition; these tests fail when they have drifted.
//! `UPDATE_MAN=1 cargo test -p lb-proxy --test man_page` regenerates the man pages,
//! `UPDATE_COMPLETIONS=1 cargo test -p lb-proxy --test man_page` the completions.

ipi_lab::documentation_tests!(lb_proxy::cli::Cli, "lb-proxy");
