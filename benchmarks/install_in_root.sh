#!/usr/bin/env bash
# shellcheck disable=SC2016  # the checks run in the root's own shell: $(...) is for it
# Install qrpos into a fresh Debian root file system as an image builder would, and check
# what an installer meets: the arm64 root runs under qemu-user (binfmt_misc).
#
#   sudo benchmarks/install_in_root.sh [--arch arm64|amd64] [--suite bookworm] [--root DIR]
#
# Steps: debootstrap the root (kept in DIR, reused when it is there), put this checkout's
# committed files in it (git archive HEAD), run deploy/install.sh --image-build inside it
# (chroot: no systemd runs, as in pi-gen), then check from inside the root:
#   - `qrpos` is on PATH (/usr/local/bin/qrpos -> the current release);
#   - `qrpos --version` and `qrpos doctor --no-camera` run (doctor may fail its service
#     checks: there is no network service configured; it must not crash);
#   - the unit verifies (`systemd-analyze verify` inside the root);
#   - the textfile folder for node_exporter exists, owned by the kiosk user;
#   - the release layout: /opt/qrpos/venv links into /opt/qrpos/releases/.
# Prints one line per check and `RESULT: ok` or `RESULT: FAILED`. Needs root, network
# (Debian's mirror and PyPI), debootstrap, and for arm64 qemu-user-static with its binfmt
# handler registered (apt install qemu-user-static binfmt-support).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARCH=arm64
SUITE=bookworm
ROOT=""
MIRROR=${MIRROR:-http://deb.debian.org/debian}

while [ $# -gt 0 ]; do
    case "$1" in
        --arch) ARCH=$2; shift ;;
        --suite) SUITE=$2; shift ;;
        --root) ROOT=$2; shift ;;
        -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install_in_root.sh: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
ROOT=${ROOT:-/var/tmp/qrpos-root-$SUITE-$ARCH}
[ "$(id -u)" -eq 0 ] || { echo "install_in_root.sh: run as root" >&2; exit 1; }

failed=0
check() {  # check NAME COMMAND...: one line, ok or FAIL
    local name=$1
    shift
    if "$@" >/tmp/qrpos-root-check.out 2>&1; then
        printf 'ok    %s\n' "$name"
    else
        printf 'FAIL  %s\n' "$name"
        sed 's/^/      /' /tmp/qrpos-root-check.out | tail -15
        failed=1
    fi
}
inside() {
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/host-ca-certificates.crt "$@"
}

started=$SECONDS
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    echo "== debootstrap $SUITE $ARCH into $ROOT"
    debootstrap --arch="$ARCH" --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >/tmp/qrpos-debootstrap.log 2>&1 ||
        { tail -20 /tmp/qrpos-debootstrap.log; exit 1; }
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# the host's trusted certificates (a proxy's own CA included), for pip inside the root; a
# file of their own: the root's ca-certificates package rewrites its bundle when installed
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca-certificates.crt"
for fs in proc sys dev; do
    mountpoint -q "$ROOT/$fs" || mount --bind "/$fs" "$ROOT/$fs"
done
trap 'for fs in dev sys proc; do umount -l "$ROOT/$fs" 2>/dev/null || true; done' EXIT

echo "== the checkout's committed files into $ROOT/opt/qrpos-src ($(git -C "$here" rev-parse --short HEAD))"
rm -rf "$ROOT/opt/qrpos-src"
mkdir -p "$ROOT/opt/qrpos-src"
git -C "$here" archive HEAD | tar -x -C "$ROOT/opt/qrpos-src"

echo "== deploy/install.sh --image-build inside the root"
if ! inside bash /opt/qrpos-src/deploy/install.sh --image-build >/tmp/qrpos-root-install.log 2>&1; then
    tail -30 /tmp/qrpos-root-install.log
    echo "RESULT: FAILED (install.sh)"
    exit 1
fi
grep -E '^(==>|    WARNING)' /tmp/qrpos-root-install.log | sed 's/^/   /'

echo "== checks ($(inside uname -m), $(inside sh -c '. /etc/os-release; echo "$PRETTY_NAME"'))"
check "qrpos on PATH" inside sh -c 'command -v qrpos && test "$(command -v qrpos)" = /usr/local/bin/qrpos'
check "qrpos --version" inside qrpos --version
# exit 1 is "a check failed" (no service is configured here); a crash is anything else
check "qrpos doctor runs" inside sh -c 'QRPOS_LANGUAGE=en qrpos doctor --no-camera; [ $? -le 1 ]'
check "the unit verifies" inside systemd-analyze verify /etc/systemd/system/qrpos.service
check "textfile folder" inside sh -c 'test "$(stat -c %U /var/lib/node_exporter/textfile_collector)" = qrpos'
check "release layout" inside sh -c 'readlink -f /opt/qrpos/venv | grep -q "^/opt/qrpos/releases/"'
check "wheels for $ARCH" inside sh -c '/opt/qrpos/venv/bin/python -c "import zxingcpp, pyzbar.pyzbar, cv2, textual, httpx, msgspec"'
echo "elapsed: $((SECONDS - started)) s"
if [ "$failed" -eq 0 ]; then echo "RESULT: ok"; else echo "RESULT: FAILED"; exit 1; fi
