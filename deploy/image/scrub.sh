#!/usr/bin/env bash
# Remove from a root everything that must differ between two cards or must not leave the
# build machine:  scrub.sh ROOT
# Run last by deploy/image/customize.sh (build.sh) and by the pi-gen stage
# (deploy/image/pi-gen/stage-qrpos). Safe to run again.
set -euo pipefail
root=${1:?usage: scrub.sh ROOT}
note() { printf '    scrub: %s\n' "$*"; }
[ -d "$root/etc" ] || { echo "scrub.sh: $root is not a root file system" >&2; exit 64; }
: >"$root/etc/machine-id"   # empty: systemd makes one on the first boot (ConditionFirstBoot)
rm -f "$root/var/lib/dbus/machine-id" "$root/var/lib/systemd/random-seed" \
    "$root"/var/lib/systemd/credential.secret \
    "$root"/etc/ssh/ssh_host_*_key "$root"/etc/ssh/ssh_host_*_key.pub \
    "$root/etc/host-ca-certificates.crt" "$root/etc/credstore.encrypted/qrpos-password"
[ ! -d "$root/var/lib/qrpos" ] || find "$root/var/lib/qrpos" -mindepth 1 -delete
rm -rf "$root/root/.cache" "$root/var/cache/apt"/*.bin "$root/var/lib/apt/lists"/*_* "$root/tmp"/* \
    "$root/var/tmp"/*
[ ! -d "$root/var/log" ] || find "$root/var/log" -type f -exec truncate -s 0 {} +
note "machine-id emptied; no SSH host key, credential, random seed or state left"
