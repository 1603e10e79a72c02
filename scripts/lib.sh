# What scripts/test, scripts/demo and scripts/bench share. Sourced, not run.

step() { printf '\n==> %s\n' "$*"; }

# install_packages PACKAGE...: apt-get install those not installed yet (needs root).
install_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "$0: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
        echo "$0: run it as root (sudo $0), or install them yourself" >&2
        exit 2
    fi
    step "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
