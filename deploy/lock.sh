#!/usr/bin/env bash
# Regenerate the hashed locks from pyproject.toml and deploy/constraints.txt.
#
#   bash deploy/lock.sh          after changing a dependency in pyproject.toml or a pin in
#                                deploy/constraints.txt; commit the two .lock files it writes
#
# deploy/requirements.lock       the kiosk's set (install.sh, the Ansible play)
# deploy/requirements-dev.lock   the same set plus the dev tools (dev.sh, CI)
#
# Both are universal (every platform and Python >= 3.11: x86_64 dev machines and CI,
# the aarch64 Pi) and carry the sha256 of every file PyPI has for each pinned release.
# numpy is pinned to each supported release's own python3-numpy, forked by Python version
# in deploy/constraints.txt: Debian 12 / Bookworm (Python 3.11) 1.24.2, Debian 13 / Trixie
# (Python 3.13) 2.2.4. picamera2's compiled parts are built against it and the kiosk's venv
# must not shadow it; OpenCV follows (4.8 does not import under numpy 2). pip installs
# the entries whose markers hold for its Python (docs/releases.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
UV=${UV:-${QRPOS_VENV:-$here/.venv}/bin/uv}
[ -x "$UV" ] || { echo "lock.sh: $UV not found: run bash deploy/dev.sh test first" >&2; exit 1; }

compile() {
    # --no-config: uv's default index (PyPI), whatever this machine's pip or uv is set up with
    "$UV" pip compile --no-config --universal --python-version 3.11 --generate-hashes \
        --constraint deploy/constraints.txt \
        --custom-compile-command "bash deploy/lock.sh" --quiet "$@"
}
compile pyproject.toml deploy/build-requirements.in -o deploy/requirements.lock
# the dev set is constrained by the kiosk's lock: shared packages get the same versions
compile pyproject.toml deploy/build-requirements.in --extra dev \
    --constraint deploy/requirements.lock -o deploy/requirements-dev.lock
echo "wrote deploy/requirements.lock and deploy/requirements-dev.lock"
