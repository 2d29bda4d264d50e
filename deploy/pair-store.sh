#!/usr/bin/env bash
# qrpos-pair-store: root's side of the kiosk's pairing screen (qrpos-pair@.service, one
# connection of qrpos-pair.socket on stdin and stdout). Installed by deploy/install.sh as
# /usr/local/sbin/qrpos-pair-store beside provision.sh (/usr/local/sbin/qrpos-provision).
#
# Reads three lines: the service's base URL, the terminal's username, its password. Hands
# them to provision.sh (--no-pin --no-restart: the kiosk sets its PIN itself and carries on
# paired), which verifies them against the service AGAIN as root before it stores the
# password as the encrypted credential: the kiosk user cannot plant a password the service
# does not take. Answers one line: "ok", or "failed EXIT" (provision.sh's exit status: 4 the
# service rejected them, 64 malformed, 1 anything else). The password is passed on stdin
# only (printf is a builtin: never in a process list), never logged.
set -uo pipefail

PROVISION=${QRPOS_PROVISION:-/usr/local/sbin/qrpos-provision}

answer() { printf '%s\n' "$1"; exit 0; }

IFS= read -r -t 30 base_url || answer "failed 64"
IFS= read -r -t 30 username || answer "failed 64"
IFS= read -r -t 30 password || answer "failed 64"
base_url=${base_url%$'\r'}
username=${username%$'\r'}
password=${password%$'\r'}
if [ -z "$base_url" ] || [ -z "$username" ] || [ -z "$password" ]; then
    answer "failed 64"
fi
case "$username" in term_[A-Za-z0-9]*) ;; *) answer "failed 64" ;; esac
case "$base_url" in https://* | http://*) ;; *) answer "failed 64" ;; esac

echo "pairing $username with $base_url from the kiosk's pairing screen" >&2
printf '%s\n' "$password" |
    "$PROVISION" --base-url "$base_url" --username "$username" --no-pin --no-restart >&2
status=$?
unset password
if [ "$status" -eq 0 ]; then
    answer "ok"
fi
answer "failed $status"
