#!/usr/bin/env bash
# The README's two commands on a fresh Debian machine, as a new developer types them: in a
# debootstrapped root (Debian 13 "trixie" or 12 "bookworm"), a clone of this checkout's
# committed HEAD, then `deploy/dev.sh demo` (in tmux: the amount screen must be drawn) and
# `deploy/dev.sh test` (ruff, mypy, import contracts and the whole suite), run by a plain
# user with sudo, nothing else typed. What breaks on the other release is caught here.
#
#   sudo benchmarks/suite_in_root.sh [--release trixie|bookworm] [--root DIR] [--no-test]
#                                    [--as-root] [-- PYTEST ARGS]
#
# --as-root: the clone in /root (mode 0700) and both commands run by root, as an installer
# on a Pi's own root shell types them (the kiosk's privilege-dropping tests then run).
#
# The root is kept in DIR (default /var/tmp/qrpos-suite-<release>-amd64) and reused: its
# clone is made afresh each run, its .venv is not (delete DIR for a from-nothing run).
# The suite takes 12+ minutes on two idle cores and more when they are shared; the whole
# output goes to DIR.log as well as the terminal. Needs root, network (Debian's mirror
# and PyPI), debootstrap and systemd-nspawn (apt install debootstrap systemd-container).
# pip in the root trusts the host's CA bundle (a proxy's own CA included): PIP_CERT.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUITE=trixie
ROOT=""
TEST=1
WHO=dev
MIRROR=${MIRROR:-http://deb.debian.org/debian}
while [ $# -gt 0 ]; do
    case "$1" in
        --release) SUITE=$2; shift ;;
        --root) ROOT=$2; shift ;;
        --no-test) TEST=0 ;;
        --as-root) WHO=root ;;
        --) shift; break ;;
        -h | --help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "suite_in_root.sh: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
case "$SUITE" in
    bookworm | trixie) ;;
    *) echo "suite_in_root.sh: --release bookworm or trixie" >&2; exit 64 ;;
esac
ROOT=${ROOT:-/var/tmp/qrpos-suite-$SUITE-amd64}
LOG=$ROOT.log
[ "$(id -u)" -eq 0 ] || { echo "suite_in_root.sh: run as root" >&2; exit 1; }
exec > >(tee "$LOG") 2>&1

say() { printf '== %s (%s)\n' "$*" "$(date -u +%H:%M:%SZ)"; }

if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    say "debootstrap $SUITE amd64 into $ROOT"
    debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
        { tail -20 "$ROOT.debootstrap.log"; exit 1; }
fi
# what a developer's machine has before the README: git, sudo, a user of their own
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca-certificates.crt"
if ! chroot "$ROOT" sh -c 'command -v git && command -v sudo' >/dev/null; then
    say "git and sudo in the root (the machine a developer starts from)"
    chroot "$ROOT" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends git ca-certificates sudo' >/dev/null
fi
chroot "$ROOT" sh -c 'id dev >/dev/null 2>&1 || useradd -m -s /bin/bash dev'
echo 'dev ALL=(ALL) NOPASSWD:ALL' >"$ROOT/etc/sudoers.d/dev"
chmod 0440 "$ROOT/etc/sudoers.d/dev"

HOME_DIR=/home/dev
[ "$WHO" = root ] && HOME_DIR=/root
CLONE=$ROOT$HOME_DIR/qrpos
say "a clone of $(git -C "$here" rev-parse --short HEAD) in $HOME_DIR/qrpos (by $WHO)"
# the committed HEAD only, as `git clone` gives it; the old .venv is kept (slow to remake)
if [ -d "$CLONE/.venv" ]; then mv "$CLONE/.venv" "$ROOT$HOME_DIR/venv.keep"; fi
rm -rf "$CLONE"
git clone -q --no-hardlinks "$here" "$CLONE"
git -C "$CLONE" checkout -q "$(git -C "$here" rev-parse HEAD)"
if [ -d "$ROOT$HOME_DIR/venv.keep" ]; then mv "$ROOT$HOME_DIR/venv.keep" "$CLONE/.venv"; fi
if [ "$WHO" = root ]; then
    chmod 0700 "$ROOT/root" # as Debian makes it: the kiosk's user cannot read the clone
else
    chroot "$ROOT" chown -R dev:dev /home/dev
fi

# nspawn (not a plain chroot): /dev/pts, /dev/shm and /tmp as on a machine. Its state under
# /run/systemd/nspawn must be a tmpfs (a host without systemd as PID 1 may lack one).
if [ "$(stat -f -c %T /run)" != tmpfs ]; then
    mkdir -p /run/systemd/nspawn
    mountpoint -q /run/systemd/nspawn || mount -t tmpfs -o mode=0755 tmpfs /run/systemd/nspawn
fi
# /run/systemd as a booted machine has it: systemd 257's `systemd-analyze verify` and
# `security` (tests/installer/test_systemd_unit.py) stop at "Failed to create directory
# '/run/systemd/'" when a non-root user runs them where PID 1 has not made it.
as_dev() {
    systemd-nspawn -q --register=no --keep-unit --machine="qrpos-suite-$$" -D "$ROOT" \
        --tmpfs=/run/systemd:mode=0755 \
        --user="$WHO" --chdir="$HOME_DIR/qrpos" --setenv=HOME="$HOME_DIR" \
        --setenv=PIP_CERT=/etc/host-ca-certificates.crt /usr/bin/env bash -c "$1"
}

say "deploy/dev.sh demo, in tmux: the amount screen"
demo_started=$SECONDS
# shellcheck disable=SC2016  # the script runs in the root's shell: $(...) is for it
if as_dev '
    # tmux is what this check drives the demo with (the README does not need it)
    command -v tmux >/dev/null || sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
    tmux new-session -d -s demo -x 80 -y 24 "deploy/dev.sh demo --language en; sleep 600"
    for _ in $(seq 1 600); do
        if tmux capture-pane -p -t demo | grep -q "Enter the amount"; then
            tmux capture-pane -p -t demo | sed "s/^/    | /"
            tmux kill-server
            exit 0
        fi
        sleep 1
    done
    tmux capture-pane -p -t demo | sed "s/^/    | /"
    tmux kill-server
    exit 1
'; then
    echo "ok    dev.sh demo draws the amount screen ($((SECONDS - demo_started)) s, installs included)"
else
    echo "FAIL  dev.sh demo: no amount screen"
    exit 1
fi

[ "$TEST" -eq 1 ] || exit 0
say "deploy/dev.sh test $*"
test_started=$SECONDS
set +e
as_dev "nice -n 10 deploy/dev.sh test $*"
status=$?
set -e
echo "deploy/dev.sh test: exit $status after $((SECONDS - test_started)) s ($(date -u +%FT%TZ))"
exit "$status"
