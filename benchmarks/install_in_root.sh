#!/usr/bin/env bash
# shellcheck disable=SC2016  # the checks run in the root's own shell: $(...) is for it
# Install qrpos into a fresh Debian root file system as an image builder would, and check
# what an installer meets: the arm64 root runs under qemu-user (binfmt_misc).
#
#   sudo benchmarks/install_in_root.sh [--release bookworm|trixie] [--arch arm64|amd64]
#                                      [--root DIR] [--no-boot] [--update]
#
# Steps: debootstrap the root (kept in DIR, reused when it is there), put this checkout's
# committed files in it (git archive HEAD), run deploy/install.sh --image-build inside it
# (chroot: no systemd runs, as in pi-gen), then check from inside the root:
#   - `qrpos` is on PATH (/usr/local/bin/qrpos -> the current release);
#   - `qrpos --version` and `qrpos doctor --no-camera` run (doctor may fail its service
#     checks: there is no network service configured; it must not crash);
#   - the unit verifies (`systemd-analyze verify` inside the root);
#   - the textfile folder for node_exporter exists, owned by the kiosk user;
#   - the release layout: /opt/qrpos/venv links into /opt/qrpos/releases/;
#   - the wheels of the lock's set for the root's Python import, and numpy is the
#     system's own (python3-numpy: 1.24.2 on Bookworm, 2.2.4 on Trixie), not shadowed;
# then boots the root (systemd-nspawn --boot, unless --no-boot) and, inside it,
# benchmarks/nspawn_sale.py: provision.sh pairs with a sandbox service, the unit starts,
# its watchdog pings and a sale completes through the replay camera (on the host's own
# architecture only: under qemu-user systemd cannot set up the unit's credentials). With --update, the
# kiosk is then updated by deploy/ansible/update.yml (run inside the root against itself,
# ansible_connection=local) to a release built from the same checkout, and must sell again.
# Prints one line per check and `RESULT: ok` or `RESULT: FAILED`; the whole logs go beside
# the root (DIR.install.log, DIR.boot.log, ...), so that two runs at once keep theirs. Needs root, network
# (Debian's mirror and PyPI), debootstrap, systemd-nspawn (systemd-container) and for
# arm64 qemu-user-static with its binfmt handler registered (apt install
# qemu-user-static binfmt-support). pip in the root trusts the host's CA bundle (a
# proxy's own CA included).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARCH=arm64
SUITE=bookworm
ROOT=""
BOOT=1
UPDATE=0
MIRROR=${MIRROR:-http://deb.debian.org/debian}

while [ $# -gt 0 ]; do
    case "$1" in
        --arch) ARCH=$2; shift ;;
        --release | --suite) SUITE=$2; shift ;;
        --root) ROOT=$2; shift ;;
        --no-boot) BOOT=0 ;;
        --update) UPDATE=1 ;;
        -h | --help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install_in_root.sh: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
case "$SUITE" in
    bookworm | trixie) ;;
    *) echo "install_in_root.sh: --release bookworm or trixie (the releases qrpos supports)" >&2; exit 64 ;;
esac
ROOT=${ROOT:-/var/tmp/qrpos-root-$SUITE-$ARCH}
[ "$(id -u)" -eq 0 ] || { echo "install_in_root.sh: run as root" >&2; exit 1; }

failed=0
check() {  # check NAME COMMAND...: one line, ok or FAIL
    local name=$1
    shift
    if "$@" >"$ROOT.check.out" 2>&1; then
        printf 'ok    %s\n' "$name"
    else
        printf 'FAIL  %s\n' "$name"
        sed 's/^/      /' "$ROOT.check.out" | tail -15
        failed=1
    fi
}
inside() {
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/host-ca-certificates.crt "$@"
}

boot_and_sell() {
    # The root booted as a machine (its own systemd as PID 1), the kiosk sold on inside it.
    echo "== systemd-nspawn --boot: the unit, its watchdog and a sale inside the root"
    command -v systemd-nspawn >/dev/null ||
        { echo "FAIL  systemd-nspawn not found (apt install systemd-container)"; failed=1; return; }
    for fs in dev sys proc; do umount -l "$ROOT/$fs" 2>/dev/null || true; done
    # nspawn keeps per-machine state under /run/systemd/nspawn and refuses to clean it up
    # from a disk file system: on a host whose /run is not a tmpfs (a container without
    # systemd as PID 1), a tmpfs of its own there
    if [ "$(stat -f -c %T /run)" != tmpfs ]; then
        mkdir -p /run/systemd/nspawn
        mountpoint -q /run/systemd/nspawn || mount -t tmpfs -o mode=0755 tmpfs /run/systemd/nspawn
    fi
    local machine=qrpos-check-$$ log=$ROOT.boot.log nspawn leader="" state="" booted=0
    # --register=no --keep-unit: no systemd-machined needed on the host
    systemd-nspawn --boot --register=no --keep-unit --machine="$machine" -D "$ROOT" \
        >"$log" 2>&1 </dev/null &
    nspawn=$!
    for _ in $(seq 1 120); do
        leader=$(pgrep -P "$nspawn" | head -n 1 || true)
        [ -n "$leader" ] && state=$(nsenter -t "$leader" -a systemctl is-system-running 2>/dev/null || true)
        case "$state" in running | degraded) booted=1; break ;; esac
        sleep 2
    done
    if [ "$booted" -eq 0 ]; then
        printf 'FAIL  the root boots (state: %s)\n' "${state:-none}"
        tail -20 "$log" | sed 's/^/      /'
        failed=1
    else
        printf 'ok    the root boots (systemd %s, %s)\n' \
            "$(nsenter -t "$leader" -a systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')" "$state"
        local update=()
        if [ "$UPDATE" -eq 1 ]; then
            update=(--update "PIP_CERT=/etc/host-ca-certificates.crt /opt/ansible/bin/ansible-playbook \
                -i /opt/qrpos-git/kiosk.ini /opt/qrpos-git/deploy/ansible/update.yml")
        fi
        if [ "$ARCH" != "$(dpkg --print-architecture 2>/dev/null || echo amd64)" ]; then
            # Under qemu-user the unit cannot start at all: systemd sets up its credentials
            # (LoadCredentialEncrypted=) with mount calls qemu-user does not emulate; the
            # journal says "Failed to set up credentials: Invalid argument" (status
            # 243/CREDENTIALS; seen on Bookworm, Trixie fails the same step with an empty
            # journal under the emulator). That is the emulator, not the
            # unit: the unit, its watchdog and a sale are checked in an amd64 root.
            printf 'skip  the unit, its watchdog and a sale: not under qemu-user (%s on %s);\n' \
                "$ARCH" "$(uname -m)"
            printf '      run --arch %s for them\n' "$(dpkg --print-architecture 2>/dev/null || echo amd64)"
        elif ! nsenter -t "$leader" -a /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 /opt/qrpos/venv/bin/python /opt/qrpos-src/benchmarks/nspawn_sale.py \
            --patience 120 "${update[@]}"; then
            failed=1
        fi
        nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1 || true
    fi
    for _ in $(seq 1 60); do kill -0 "$nspawn" 2>/dev/null || break; sleep 1; done
    kill "$nspawn" 2>/dev/null || true
    wait "$nspawn" 2>/dev/null || true
}

started=$SECONDS
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    echo "== debootstrap $SUITE $ARCH into $ROOT"
    debootstrap --arch="$ARCH" --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
        { tail -20 "$ROOT.debootstrap.log"; exit 1; }
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
if ! inside bash /opt/qrpos-src/deploy/install.sh --image-build >"$ROOT.install.log" 2>&1; then
    tail -30 "$ROOT.install.log"
    echo "RESULT: FAILED (install.sh)"
    exit 1
fi
grep -E '^(==>|    WARNING)' "$ROOT.install.log" | sed 's/^/   /'

echo "== checks ($(inside uname -m), $(inside sh -c '. /etc/os-release; echo "$PRETTY_NAME"'))"
check "qrpos on PATH" inside sh -c 'command -v qrpos && test "$(command -v qrpos)" = /usr/local/bin/qrpos'
check "qrpos --version" inside qrpos --version
# exit 1 is "a check failed" (no service is configured here); a crash is anything else
check "qrpos doctor runs" inside sh -c 'QRPOS_LANGUAGE=en qrpos doctor --no-camera; [ $? -le 1 ]'
check "the unit verifies" inside systemd-analyze verify /etc/systemd/system/qrpos.service
check "textfile folder" inside sh -c 'test "$(stat -c %U /var/lib/node_exporter/textfile_collector)" = qrpos'
check "release layout" inside sh -c 'readlink -f /opt/qrpos/venv | grep -q "^/opt/qrpos/releases/"'
check "wheels for $ARCH" inside sh -c '/opt/qrpos/venv/bin/python -c "import zxingcpp, pyzbar.pyzbar, cv2, textual, httpx, msgspec, PIL"'
# the venv sees python3-numpy (picamera2 is built against it) and holds no numpy of its own
check "numpy is the system's" inside sh -c 'v=$(/opt/qrpos/venv/bin/python -c "import numpy; print(numpy.__version__, numpy.__file__)") && echo "$v" && case "$v" in *" /usr/lib/python3/dist-packages/numpy/"*) ;; *) exit 1 ;; esac'
check "a QR code decodes (zxing and zbar)" inside sh -c 'cd /tmp && /opt/qrpos/venv/bin/python -c "
import numpy as np, segno, zxingcpp
from pyzbar import pyzbar
m = np.array(segno.make_qr(\"vqr_root_check\").matrix, np.uint8)
img = np.kron(np.pad(1 - m, 4, constant_values=1) * 255, np.ones((6, 6), np.uint8)).astype(np.uint8)
assert [r.text for r in zxingcpp.read_barcodes(img)] == [\"vqr_root_check\"]
assert [r.data for r in pyzbar.decode(img)] == [b\"vqr_root_check\"]
"'

if [ "$UPDATE" -eq 1 ] && [ "$failed" -eq 0 ]; then
    # what update.yml needs on its controller, here the kiosk itself: ansible-core (the dev
    # lock's version for this Python), git and a clone to pack, sudo for `become`
    echo "== for --update: ansible-core, git and a clone of $(git -C "$here" rev-parse --short HEAD) in the root"
    inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git sudo >/dev/null'
    rm -rf "$ROOT/opt/qrpos-git"
    git clone -q --no-hardlinks "$here" "$ROOT/opt/qrpos-git"
    git -C "$ROOT/opt/qrpos-git" checkout -q "$(git -C "$here" rev-parse HEAD)"
    printf '[kiosks]\nkiosk ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n' \
        >"$ROOT/opt/qrpos-git/kiosk.ini"
    inside sh -c 'v=$(python3 /opt/qrpos-src/deploy/locked_version.py ansible-core /opt/qrpos-src/deploy/requirements-dev.lock) &&
        python3 -m venv /opt/ansible && /opt/ansible/bin/pip install -q "ansible-core==$v"' ||
        { echo "FAIL  ansible-core in the root"; failed=1; }
fi
if [ "$BOOT" -eq 1 ] && [ "$failed" -eq 0 ]; then
    boot_and_sell
fi
echo "elapsed: $((SECONDS - started)) s"
if [ "$failed" -eq 0 ]; then echo "RESULT: ok"; else echo "RESULT: FAILED"; exit 1; fi
