#!/usr/bin/env bash
# The developer entry point on a fresh Debian 12 or 13 / Raspberry Pi OS machine.
#   deploy/dev.sh demo    install everything, then start the demo kiosk
#   deploy/dev.sh test    install everything, then lint, type-check and run the whole suite
#   deploy/dev.sh bench   install everything, then run the long benchmarks in benchmarks/
# It installs what it needs itself (system packages through apt, Python packages into
# ./.venv from the hashed lock deploy/requirements-dev.lock, the same versions the kiosk
# installs from deploy/requirements.lock) and is safe to run again. The lock is universal:
# pip takes the set for the Python it runs (3.11: Bookworm's numpy 1.24.2, 3.13: Trixie's
# numpy 2.2.4; docs/releases.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
mode=${1:-}
shift || true
VENV=${QRPOS_VENV:-$here/.venv}
PYTHON=${PYTHON:-python3}

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
    # Install the Debian packages named, only those missing; one apt-get update at most.
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing system packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

system_packages() {
    # libfribidi0: Pillow's wheels load it to lay text out with raqm; without it the slips
    # are drawn by the basic layout, other bytes than tests/peripherals/golden_slips.json
    # pins and the kiosk prints (a fresh Debian 12 or 13 root has none)
    local pkgs=(libfribidi0)
    # zbar's library: Debian 13 renamed it for the 64-bit time_t transition
    if command -v apt-cache >/dev/null && [ -n "$(apt-cache policy libzbar0t64 2>/dev/null |
        awk '/Candidate:/ && $2 != "(none)" {print $2}')" ]; then
        pkgs+=(libzbar0t64)
    else
        pkgs+=(libzbar0)
    fi
    "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
    command -v "$PYTHON" >/dev/null || pkgs+=(python3 python3-venv)
    if [ "$mode" = test ] || [ "$mode" = bench ]; then
        # systemd-analyze checks the units, shellcheck the install script, tmux drives
        # the kiosk in a real terminal for the end-to-end test, libfaketime steps the wall
        # clock alone under the real commands (tests/ledger/test_cli_clock_steps.py),
        # aplay plays the till's tones into ALSA's null device (tests/peripherals),
        # tesseract reads the customer display's pictures back in mn and en (tests/display).
        pkgs+=(shellcheck tmux libfaketime alsa-utils tesseract-ocr tesseract-ocr-mon
            tesseract-ocr-eng)
        command -v systemd-analyze >/dev/null || pkgs+=(systemd)
    fi
    if command -v dpkg-query >/dev/null; then
        apt_install "${pkgs[@]}"
    else
        say "not a Debian system: make sure these are installed: ${pkgs[*]}"
    fi
}

python_packages() {
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtual environment $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    # Reinstall only when the dependency declarations changed.
    local stamp="$VENV/.qrpos-installed"
    local want
    want=$(cat pyproject.toml deploy/requirements-dev.lock | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        local py
        py=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        case "$py" in
            3.11) say "Python $py: the lock's Debian 12 / Bookworm set (numpy 1.24.2)" ;;
            3.13) say "Python $py: the lock's Debian 13 / Trixie set (numpy 2.2.4)" ;;
            *) say "Python $py is neither 3.11 (Bookworm) nor 3.13 (Trixie): untested; trying the lock's set for it" ;;
        esac
        say "installing the locked dependencies (every file checked by its sha256) into $VENV"
        "$VENV/bin/python" -m pip install -q --require-hashes -r deploy/requirements-dev.lock
        # qrpos itself: built from this checkout with the locked setuptools, nothing fetched
        "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation --no-index -e .
        echo "$want" >"$stamp"
    fi
}

# mypy over tests/: each test directory is its own root (its conftest and harness are
# imported by name), so each is checked alone, with tests/ for the shared helpers and a
# cache of its own (two roots' "conftest" must not share one)
mypy_tests() {
    local dir name
    for dir in tests/*/; do
        name=$(basename "$dir")
        [ "$name" = "__pycache__" ] && continue
        MYPYPATH="tests:$dir:benchmarks" mypy --strict --cache-dir ".mypy_cache/tests-$name" "$dir"
    done
    MYPYPATH=tests mypy --strict --cache-dir .mypy_cache/tests-top tests/*.py
}

case "$mode" in
    demo)
        system_packages
        python_packages
        exec "$VENV/bin/qrpos" demo "$@"
        ;;
    test)
        system_packages
        python_packages
        export PATH="$VENV/bin:$PATH"
        say "ruff"
        ruff check --no-cache src tests benchmarks
        ruff format --no-cache --check src tests benchmarks
        say "mypy (strict on src/)"
        mypy
        say "mypy (strict on tests/, a directory at a time: each has its own conftest)"
        mypy_tests
        say "import contracts (only qrpos.tui imports Textual)"
        lint-imports
        say "pytest"
        exec pytest "$@"
        ;;
    types)
        # mypy as the test command runs it, without installing anything (pre-commit)
        export PATH="$VENV/bin:$PATH"
        mypy
        mypy_tests
        ;;
    bench)
        system_packages
        python_packages
        export PATH="$VENV/bin:$PATH"
        exec python benchmarks/run_all.py "$@"
        ;;
    *)
        echo "usage: deploy/dev.sh demo|test|bench [args...]" >&2
        exit 64
        ;;
esac
