#!/usr/bin/env bash
# Pair this kiosk with its terminal and start it. Run after deploy/install.sh.
#
#   sudo deploy/provision.sh [--base-url URL] [--username term_XXXXXXXX] [--no-pin]
#                            [--no-restart]
#
# Asks for the terminal password without echo (or reads it from stdin when stdin is not
# a terminal), verifies it with `qrpos pair` (GET /v1/transactions?limit=1), then stores
# it ONLY as an encrypted systemd credential (systemd-creds encrypt, bound to this
# machine) in /etc/credstore.encrypted/qrpos-password, which the unit loads with
# LoadCredentialEncrypted=. The password is never written to a plain file.
# Exits 4 when the service rejected the username and password, 1 on any other failure.
# Sets the manager PIN (guards reversals) unless --no-pin. --no-restart leaves the kiosk
# running (the pairing screen's helper, deploy/pair-store.sh: the kiosk carries on paired).
#
# Rotation: run this again with the new password right after rotating the terminal in
# the merchant dashboard (see hardware.md, "Rotating the terminal password").
set -euo pipefail

PREFIX=/opt/qrpos
QRPOS=$PREFIX/venv/bin/qrpos
STATE_DIR=/var/lib/qrpos
CONFIG=/etc/qrpos/config.toml
CREDSTORE=/etc/credstore.encrypted
CREDENTIAL=qrpos-password
SERVICE_USER=qrpos
UNIT_NAME=qrpos.service

BASE_URL=""
USERNAME=""
SET_PIN=1
RESTART=1

while [ $# -gt 0 ]; do
    case "$1" in
        --base-url) BASE_URL=${2:?--base-url needs a URL}; shift ;;
        --username) USERNAME=${2:?--username needs a value}; shift ;;
        --no-pin) SET_PIN=0 ;;
        --no-restart) RESTART=0 ;;
        -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "provision.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

die() { echo "provision.sh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (sudo): the credential store is root-only"
[ -x "$QRPOS" ] || die "$QRPOS not found: run deploy/install.sh first"
command -v systemd-creds >/dev/null || die "systemd-creds not found (systemd 250 or newer)"

interactive=0
[ -t 0 ] && interactive=1

ask() {
    # ask VAR "prompt" [silent]: read one line from the terminal or from stdin.
    local __var=$1 prompt=$2 silent=${3:-} value=""
    if [ "$interactive" -eq 1 ]; then
        if [ -n "$silent" ]; then
            read -r -s -p "$prompt" value
            echo >&2
        else
            read -r -p "$prompt" value
        fi
    else
        IFS= read -r value || true
    fi
    printf -v "$__var" '%s' "$value"
}

current_base_url() {
    sed -n 's/^base_url *= *"\(.*\)"/\1/p' "$CONFIG" 2>/dev/null | head -n 1
}

# --- base URL in the config file (not a secret) -------------------------------------
[ -n "$BASE_URL" ] || BASE_URL=$(current_base_url)
[ -n "$BASE_URL" ] || ask BASE_URL "Service base URL (https://...): "
[ -n "$BASE_URL" ] || die "no base URL given"
case "$BASE_URL" in *'"'* | *\\*) die "the base URL cannot contain quotes or backslashes" ;; esac
if [ "$(current_base_url)" != "$BASE_URL" ]; then
    tmp=$(mktemp "$CONFIG.XXXXXX")
    { grep -v '^base_url *=' "$CONFIG" 2>/dev/null || true; } >"$tmp"
    # base_url must come before the first [table] of the TOML file
    { printf 'base_url = "%s"\n' "$BASE_URL"; cat "$tmp"; } >"$tmp.new"
    chmod 0644 "$tmp.new"
    mv -f "$tmp.new" "$CONFIG"
    rm -f "$tmp"
    echo "base_url set in $CONFIG"
fi

# --- username and password ------------------------------------------------------------
[ -n "$USERNAME" ] || ask USERNAME "Terminal username (term_...): "
ask PASSWORD "Terminal password (not shown): " silent
[ -n "$PASSWORD" ] || die "no password given"

PIN=""
if [ "$SET_PIN" -eq 1 ]; then
    ask PIN "Manager PIN for reversals (4-12 digits, not shown): " silent
    if [ "$interactive" -eq 1 ]; then
        ask PIN2 "Manager PIN again: " silent
        [ "$PIN" = "$PIN2" ] || die "the two PINs differ; nothing was changed"
    fi
fi

# --- verify (and record the username, and the PIN) -------------------------------------
# printf is a shell builtin: the password never appears in a process list.
pair_args=(pair --config "$CONFIG" --state-dir "$STATE_DIR" --base-url "$BASE_URL"
    --username "$USERNAME" --password-stdin --no-store)
[ "$SET_PIN" -eq 1 ] && pair_args+=(--manager-pin-stdin)
set +e
printf '%s\n%s\n' "$PASSWORD" "$PIN" | "$QRPOS" "${pair_args[@]}"
status=$?
set -e
case "$status" in
    0) ;;
    4)
        # exit 4 as `qrpos pair` does: pair-store.sh tells the pairing screen "rejected"
        echo "provision.sh: the service rejected $USERNAME and this password: check both, or
    rotate the password in the merchant dashboard and run this again with the new one" >&2
        exit 4
        ;;
    *) die "pairing failed (exit $status): see the message above; nothing was stored" ;;
esac

# --- store the password as an encrypted credential -------------------------------------
install -d -m 0700 "$CREDSTORE"
tmp=$(mktemp "$CREDSTORE/.$CREDENTIAL.XXXXXX")
trap 'rm -f "$tmp"' EXIT
printf '%s' "$PASSWORD" |
    systemd-creds encrypt --name="$CREDENTIAL" - "$tmp"
chmod 0600 "$tmp"
mv -f "$tmp" "$CREDSTORE/$CREDENTIAL"
trap - EXIT
unset PASSWORD PIN PIN2
echo "password stored encrypted in $CREDSTORE/$CREDENTIAL"

# `qrpos pair` ran as root: hand the state dir back to the kiosk's user.
chown -R "$SERVICE_USER:$SERVICE_USER" "$STATE_DIR"

if [ "$RESTART" -eq 1 ]; then
    systemctl restart "$UNIT_NAME"
    echo "kiosk (re)started. Check it with: sudo $QRPOS --config $CONFIG doctor"
fi
