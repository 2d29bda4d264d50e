#!/bin/sh
# qrpos-pair-credential.service: provision.sh with the base URL, username and password
# the machine was handed as system credentials; the password goes on provision.sh's stdin
# only (never an argument, a file of ours or the journal).
set -eu
creds=${CREDENTIALS_DIRECTORY:?no credentials directory: run by qrpos-pair-credential.service}
base_url=$(cat "$creds/qrpos.pair.base_url")
username=$(cat "$creds/qrpos.pair.username")
exec bash /opt/qrpos-src/deploy/provision.sh --base-url "$base_url" --username "$username" \
    --no-pin <"$creds/qrpos.pair.password"
