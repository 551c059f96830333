#!/usr/bin/env bash
# The system tools the end-to-end tests drive, installed on first use by `make test`:
# Debian's slurm-wlm and munge (a real Slurm), prometheus (promtool), chromium (the HTML
# report in a real browser), and from npm TypeScript with Grafana's schema (the dashboard's
# check). A tool that cannot be installed (no root, no apt, no network) is not fatal: its
# tests skip and say why, and this script says so here, loudly, with the installer's own
# output kept in .venv/setup/NAME.log (the skip message names that file).
set -u
cd "$(dirname "$0")/.."
SETUP=.venv/setup
PATH=$PATH:/usr/sbin:/sbin  # Debian's daemons (slurmctld, munged), outside a minimal PATH
mkdir -p "$SETUP"

# apt_tool COMMAND PACKAGE...: install PACKAGE... from Debian unless COMMAND is already there.
apt_tool() {
    local command=$1 log="$SETUP/$1.log"
    shift
    command -v "$command" >/dev/null && { rm -f "$log"; return; }
    if { apt-get install -y -q "$@" || { apt-get update -q && apt-get install -y -q "$@"; }; } >"$log" 2>&1; then
        rm -f "$log"
    else
        echo "install_tools: WARNING: could not install $* (apt-get failed; its output: $log); the tests that need $command will skip" >&2
    fi
}

apt_tool slurmctld slurm-wlm munge
apt_tool prometheus prometheus
apt_tool chromium chromium

NODE=.venv/node
# Node trusts its own bundle of CAs, not the system's: behind a TLS-intercepting proxy
# (whose CA the system trusts) npm fails with SELF_SIGNED_CERT_IN_CHAIN unless told.
SYSTEM_CAS=/etc/ssl/certs/ca-certificates.crt
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r "$SYSTEM_CAS" ]; then
    export NODE_EXTRA_CA_CERTS=$SYSTEM_CAS
fi
if [ ! -x "$NODE/node_modules/.bin/tsc" ]; then
    log="$SETUP/npm.log"
    if ! command -v npm >/dev/null; then
        echo "npm not found on PATH" >"$log"
        echo "install_tools: WARNING: npm not found; the dashboard's check against Grafana's schema will skip ($log)" >&2
    elif npm install --no-audit --no-fund --prefix "$NODE" typescript@5.9.3 @grafana/schema@13.2.3 >"$log" 2>&1; then
        rm -f "$log"
    else
        echo "install_tools: WARNING: npm install of typescript and @grafana/schema failed (its output: $log); the dashboard's check will skip" >&2
        tail -n 5 "$log" >&2
    fi
fi
exit 0
