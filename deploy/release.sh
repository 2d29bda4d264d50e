#!/usr/bin/env bash
# Releases of qrpos side by side, a health gate after each switch, and rollback.
#
#   release.sh activate DIR   make the release built in DIR current, restart the kiosk
#                             (when it runs), check its health; roll back when it fails
#   release.sh rollback       make the previous release current again (by hand)
#   release.sh status         which release is current, which previous, which are kept
#
# Layout: every release is a venv under $PREFIX/releases/; $PREFIX/venv is a link to the
# current one (the unit, provision.sh and the PATH link all name $PREFIX/venv, so they
# follow it) and $PREFIX/previous to the one before. The switch is one rename of a link:
# atomic, so a power cut leaves either release current, never none.
#
# The health gate, in order (any failure rolls back):
#   1. the release runs: `qrpos --version`;
#   2. `qrpos doctor --no-camera --json`: the decoder, the state dir and the outbox (which
#      the new release opens, migrating it if it must) are ok. The service's own checks
#      are not gated on: a network down during an update is not a broken release;
#   3. when the kiosk runs (its unit active, or paired and enabled): after a restart the
#      unit is active within $GATE_S seconds and stays up for $STEADY_S (longer than its
#      WatchdogSec), with no restart counted: a kiosk that crashes or stops pinging the
#      watchdog fails the gate.
#
# The outbox is never copied, restored or rewritten: its unsettled sales survive an update
# and a rollback as they are. Migrations only go forward; a release rolled back to after
# the failed one migrated the outbox refuses it ("written by a newer qrpos"), visibly, and
# keeps every sale: this script says so, and the fix is a repaired release.
#
# Environment (for tests and images): QRPOS_PREFIX (/opt/qrpos), SYSTEMCTL (systemctl),
# QRPOS_GATE_S (90), QRPOS_STEADY_S (40), QRPOS_KEEP (3 releases kept), QRPOS_RESTART (0:
# never restart the kiosk, as in an image being built; unset: when it runs).
set -euo pipefail

PREFIX=${QRPOS_PREFIX:-/opt/qrpos}
SYSTEMCTL=${SYSTEMCTL:-systemctl}
GATE_S=${QRPOS_GATE_S:-90}
STEADY_S=${QRPOS_STEADY_S:-40}
KEEP=${QRPOS_KEEP:-3}
UNIT=qrpos.service
CURRENT=$PREFIX/venv
PREVIOUS=$PREFIX/previous
RELEASES=$PREFIX/releases

say() { printf '    %s\n' "$*"; }
fail() { printf 'release.sh: %s\n' "$*" >&2; }

usage() {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# Point link $1 at $2 atomically (a new link renamed over the old one).
relink() {
    ln -sfn "$2" "$1.new"
    mv -T "$1.new" "$1"
}

# A venv made before releases existed (a real directory at $PREFIX/venv) becomes the
# first release: moved aside, linked back. Its scripts name $PREFIX/venv/bin/python, which
# stays right whenever it is current again.
adopt_legacy() {
    if [ -d "$CURRENT" ] && [ ! -L "$CURRENT" ]; then
        local legacy
        legacy=$RELEASES/legacy-$(date -u +%Y%m%dT%H%M%SZ)
        mkdir -p "$RELEASES"
        mv -T "$CURRENT" "$legacy"
        relink "$CURRENT" "$legacy"
        say "the venv made before releases is kept as $legacy"
    fi
}

kiosk_runs() {
    "$SYSTEMCTL" is-active --quiet "$UNIT" 2>/dev/null ||
        { "$SYSTEMCTL" is-enabled --quiet "$UNIT" 2>/dev/null &&
            [ -f /etc/credstore.encrypted/qrpos-password ]; }
}

restarts() { "$SYSTEMCTL" show --property=NRestarts --value "$UNIT" 2>/dev/null || echo 0; }

# The local checks of `qrpos doctor --json` that a release must pass.
doctor_ok() {
    local report
    if ! report=$("$CURRENT/bin/qrpos" doctor --no-camera --json 2>/dev/null); then
        # exit 1 is "some check failed": the service may be down; judged below
        report=${report:-}
    fi
    printf '%s' "$report" | "$CURRENT/bin/python" -c '
import json, sys
try:
    checks = {c["check"]: c["status"] for c in json.load(sys.stdin)}
except (ValueError, KeyError, TypeError):
    print("    doctor printed no report")
    sys.exit(1)
bad = [n for n in ("decoder", "state dir", "outbox") if checks.get(n) != "ok"]
for name in bad:
    print("    doctor: " + name + " is " + checks.get(name, "missing"))
sys.exit(1 if bad else 0)
'
}

unit_steady() {
    local before deadline state
    before=$(restarts)
    "$SYSTEMCTL" restart "$UNIT" || return 1
    deadline=$((SECONDS + GATE_S))
    until [ "$("$SYSTEMCTL" show --property=ActiveState --value "$UNIT")" = active ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "the kiosk did not become active within ${GATE_S}s"
            return 1
        fi
        sleep 1
    done
    deadline=$((SECONDS + STEADY_S))
    while [ "$SECONDS" -lt "$deadline" ]; do
        state=$("$SYSTEMCTL" show --property=ActiveState --value "$UNIT")
        if [ "$state" != active ] || [ "$(restarts)" != "$before" ]; then
            say "the kiosk stopped or restarted within ${STEADY_S}s of starting"
            return 1
        fi
        sleep 1
    done
}

gate() {
    say "health gate: $(readlink -f "$CURRENT")"
    "$CURRENT/bin/qrpos" --version >/dev/null 2>&1 || { say "qrpos does not run"; return 1; }
    doctor_ok || return 1
    if [ "${RESTART:-0}" -eq 1 ]; then
        unit_steady || return 1
    fi
    say "health gate passed"
}

# After a rollback: does the release now current still read the outbox?
outbox_readable() {
    local out
    if ! out=$("$CURRENT/bin/qrpos" outbox list --all --json 2>&1 >/dev/null); then
        fail "the release rolled back to cannot use the outbox: ${out##*qrpos: }"
        fail "every sale in it is kept as it is; install a repaired release to go on"
        return 1
    fi
}

activate() {
    local new=$1 old=""
    [ -x "$new/bin/qrpos" ] || { fail "$new holds no qrpos release"; exit 64; }
    new=$(readlink -f "$new")
    adopt_legacy
    if [ -L "$CURRENT" ]; then old=$(readlink -f "$CURRENT"); fi
    if [ "$old" = "$new" ]; then say "$new is already current"; fi
    RESTART=${QRPOS_RESTART:-}
    if [ -z "$RESTART" ]; then
        RESTART=0
        if kiosk_runs; then RESTART=1; fi
    fi
    relink "$CURRENT" "$new"
    if [ -n "$old" ] && [ "$old" != "$new" ]; then relink "$PREVIOUS" "$old"; fi
    say "current: $new"
    if gate; then
        prune
        return 0
    fi
    if [ -z "$old" ] || [ "$old" = "$new" ]; then
        fail "the health gate failed and there is no earlier release to go back to"
        return 2
    fi
    fail "the health gate failed: rolling back to $old"
    relink "$CURRENT" "$old"
    relink "$PREVIOUS" "$new"
    if [ "$RESTART" -eq 1 ]; then "$SYSTEMCTL" restart "$UNIT" || true; fi
    outbox_readable || return 2
    say "rolled back: $old is current again"
    return 1
}

rollback() {
    [ -L "$PREVIOUS" ] || { fail "no previous release"; exit 1; }
    local old new
    old=$(readlink -f "$PREVIOUS")
    new=$(readlink -f "$CURRENT")
    relink "$CURRENT" "$old"
    relink "$PREVIOUS" "$new"
    if kiosk_runs; then "$SYSTEMCTL" restart "$UNIT" || true; fi
    outbox_readable || exit 2
    say "current: $old (previous: $new)"
}

# Keep the newest $KEEP releases, and always the current and the previous one.
prune() {
    [ -d "$RELEASES" ] || return 0
    local current previous kept=0 dir
    current=$(readlink -f "$CURRENT")
    previous=$(readlink -f "$PREVIOUS" 2>/dev/null || true)
    while IFS= read -r dir; do
        [ -f "$dir/pyvenv.cfg" ] || continue # only a release's venv is a release
        kept=$((kept + 1))
        if [ "$dir" = "$current" ] || [ "$dir" = "$previous" ] || [ "$kept" -le "$KEEP" ]; then
            continue
        fi
        rm -rf -- "$dir"
        say "removed the old release $dir"
    done < <(find "$RELEASES" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' |
        sort -rn | cut -d' ' -f2-)
}

status() {
    say "current:  $(readlink -f "$CURRENT" 2>/dev/null || echo none)"
    say "previous: $(readlink -f "$PREVIOUS" 2>/dev/null || echo none)"
    if [ -d "$RELEASES" ]; then
        find "$RELEASES" -mindepth 1 -maxdepth 1 -type d | sort | sed 's/^/    kept: /'
    fi
}

case "${1:-}" in
    activate)
        [ $# -eq 2 ] || { usage >&2; exit 64; }
        activate "$2"
        ;;
    rollback) rollback ;;
    status) status ;;
    -h | --help) usage ;;
    *) usage >&2; exit 64 ;;
esac
