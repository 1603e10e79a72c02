# shellcheck shell=bash
# What scripts/test, scripts/demo, scripts/bench, scripts/package and scripts/check-fresh share.
# Sourced, not run.

step() { printf '\n==> %s\n' "$*"; }

# What building ipi-net needs beyond a Rust toolchain (rustup's stable), in one place: every
# script that builds installs this list first, then its own. A C compiler and libc headers (ring
# and the linker), protoc and the protobuf headers (etcd-client's build script), ca-certificates
# (cargo fetching crates over HTTPS), git (cargo's own).
BUILD_PACKAGES=(ca-certificates gcc git libc6-dev libprotobuf-dev protobuf-compiler)
# The cargo tools a script may need, by what it runs: cargo-deb (scripts/package),
# cargo-nextest and cargo-fuzz (scripts/test). Installed from crates.io, --locked.
CARGO_TOOLS=(cargo-deb cargo-fuzz cargo-nextest)

# install_packages PACKAGE...: apt-get install those not installed yet (needs root).
install_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
        echo "$0: run it as root, or install them yourself" >&2
        exit 2
    fi
    step "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# install_build_deps: what every build needs (BUILD_PACKAGES), and a Rust toolchain or a clear
# word that it is missing.
install_build_deps() {
    install_packages "${BUILD_PACKAGES[@]}"
    command -v cargo >/dev/null && return 0
    if [[ -n ${SUDO_USER:-} ]]; then
        echo "$0: cargo is not on the path: sudo resets PATH; keep yours: sudo -E env \"PATH=\$PATH\" $0" >&2
    else
        echo "$0: cargo is missing: install a Rust toolchain (https://rustup.rs), then run it again" >&2
    fi
    exit 2
}

# install_cargo_tool NAME: cargo install --locked NAME (one of CARGO_TOOLS) unless `cargo SUB`
# already answers --version. Built with opt-level 1 and no LTO: these tools spend their time
# waiting on cargo, rustc and the tests, not computing, and the release profile's full
# optimisation made compiling them (cargo-nextest above all) a fifth of a test run from nothing:
# cargo-deb and cargo-fuzz took 1:12 here against 3:23 with their own profiles.
install_cargo_tool() {
    local tool=$1
    [[ " ${CARGO_TOOLS[*]} " == *" $tool "* ]] || {
        echo "$0: install_cargo_tool: $tool is not in CARGO_TOOLS (scripts/lib.sh)" >&2
        exit 2
    }
    cargo "${tool#cargo-}" --version >/dev/null 2>&1 && return 0
    step "cargo install $tool"
    CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false \
        cargo install --locked --quiet "$tool"
}

# Phase timing. `phase NAME` ends the phase running (if any) and starts NAME; `beside NAME LOG
# COMMAND...` runs COMMAND in the background while the phases go on (its output to LOG) and
# `beside_wait NAME` waits for it, failing (with its output) when it failed; `phase_report` ends
# the last phase and prints every phase's wall time, what ran beside them, and the script's
# whole wall time. scripts/test calls it on exit, so a failed run says where its time went too.
PHASE_NAMES=()
PHASE_SECONDS=()
_phase_name=
_phase_start=0
declare -A _beside_pid=() _beside_log=()
phase() {
    phase_end
    _phase_name=$1
    _phase_start=$SECONDS
    step "$1"
}
phase_end() {
    [[ -n $_phase_name ]] || return 0
    PHASE_NAMES+=("$_phase_name")
    PHASE_SECONDS+=($((SECONDS - _phase_start)))
    _phase_name=
}
beside() {
    local name=$1 log=$2
    shift 2
    step "started beside what follows: $name (output: $log)"
    mkdir -p "$(dirname "$log")"
    (
        start=$SECONDS
        status=0
        "$@" >"$log" 2>&1 || status=$?
        echo "$status $((SECONDS - start))" >"$log.done"
        exit "$status"
    ) &
    _beside_pid[$name]=$!
    _beside_log[$name]=$log
}
beside_wait() {
    local name=$1 status=0 took log=${_beside_log[$1]}
    wait "${_beside_pid[$name]}" || status=$?
    unset "_beside_pid[$name]"
    took=$(cut -d' ' -f2 "$log.done" 2>/dev/null || echo 0)
    PHASE_NAMES+=("$name (beside the phases above)")
    PHASE_SECONDS+=("$took")
    if ((status != 0)); then
        echo "$0: $name failed (exit $status), its output:" >&2
        cat "$log" >&2
        return "$status"
    fi
}
# beside_stop: stops what still runs beside (a run that failed early), and all it started.
beside_stop() {
    local name
    for name in "${!_beside_pid[@]}"; do
        kill_tree "${_beside_pid[$name]}"
    done
}
kill_tree() {
    local children child
    children=$(cat /proc/"$1"/task/*/children 2>/dev/null) || true
    for child in $children; do
        kill_tree "$child"
    done
    kill "$1" 2>/dev/null || true
}
phase_report() {
    local i
    beside_stop
    phase_end
    printf '\n==> time by phase\n'
    for i in "${!PHASE_NAMES[@]}"; do
        printf '%8s  %s\n' "$(mmss "${PHASE_SECONDS[$i]}")" "${PHASE_NAMES[$i]}"
    done
    printf '%8s  %s\n' "$(mmss "$SECONDS")" "the whole run (wall time)"
}
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
