#!/usr/bin/env bash
# Install or upgrade qrpos as a kiosk on Raspberry Pi OS (64-bit, Bookworm or Trixie).
#
#   sudo deploy/install.sh              install, or upgrade when run again: each release is
#                                       built beside the current one, switched to, checked
#                                       by a health gate and rolled back if it fails
#                                       (deploy/release.sh)
#   deploy/install.sh --dry-run         print every step, change nothing (no root needed)
#   sudo deploy/install.sh --source X   install qrpos from a wheel or a checkout X
#   deploy/install.sh --image-build     inside an image being built (a chroot): no running
#                                       systemd is asked; detected by itself in a chroot
#   ... --wheelhouse DIR                the lock's wheels from DIR, not from PyPI (the image
#                                       builder downloads them on the host; hashes still checked)
#
# Then pair the terminal once: sudo deploy/provision.sh (stores the password as an
# encrypted systemd credential and starts the kiosk). Every step checks before it acts,
# so running the script again only adds a release of qrpos and refreshes the unit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

PREFIX=/opt/qrpos
# the current release (a link into $PREFIX/releases: the unit and the PATH follow it)
VENV=$PREFIX/venv
NEW_RELEASE=$PREFIX/releases/$(date -u +%Y%m%dT%H%M%SZ)
SERVICE_USER=qrpos
STATE_DIR=/var/lib/qrpos
CONFIG_DIR=/etc/qrpos
CREDSTORE=/etc/credstore.encrypted
UNIT_NAME=qrpos.service
UNIT_DEST=/etc/systemd/system/$UNIT_NAME
CONSOLE_SETUP=/etc/default/console-setup
SYSTEM_PYTHON=/usr/bin/python3
LOCK=$here/deploy/requirements.lock
TEXTFILE_DIR=/var/lib/node_exporter/textfile_collector

DRY_RUN=0
SOURCE=$here
IMAGE_BUILD=0
WHEELHOUSE=""

usage() {
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run | -n) DRY_RUN=1 ;;
        --source)
            [ $# -ge 2 ] || { echo "install.sh: --source needs a path" >&2; exit 64; }
            SOURCE=$2
            shift
            ;;
        --image-build) IMAGE_BUILD=1 ;;
        --wheelhouse)
            [ $# -ge 2 ] || { echo "install.sh: --wheelhouse needs a directory" >&2; exit 64; }
            WHEELHOUSE=$2
            shift
            ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

step() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
warn() { printf '    WARNING: %s\n' "$*" >&2; }

# Run a command, or in a dry run print it exactly as it would run.
run() {
    if [ "$DRY_RUN" -eq 1 ]; then
        printf '    +'
        printf ' %q' "$@"
        printf '\n'
    else
        "$@"
    fi
}

# Write stdin to a file with a mode, atomically; a dry run shows the content instead.
write_file() {
    local dest=$1 mode=$2 content
    content=$(cat)
    if [ "$DRY_RUN" -eq 1 ]; then
        printf '    + write %s (mode %s):\n' "$dest" "$mode"
        printf '%s\n' "$content" | sed 's/^/    |   /'
        return 0
    fi
    local tmp
    tmp=$(mktemp "$dest.XXXXXX")
    printf '%s\n' "$content" >"$tmp"
    chmod "$mode" "$tmp"
    mv -f "$tmp" "$dest"
}

in_chroot() {
    # True when building an image: --image-build, or / is not PID 1's root (a chroot such
    # as pi-gen's stages), where no systemd runs to reload or restart anything.
    [ "$IMAGE_BUILD" -eq 1 ] && return 0
    if command -v systemd-detect-virt >/dev/null; then
        systemd-detect-virt --quiet --chroot && return 0
    fi
    return 1
}

APT_UPDATED=0
apt_update_once() {
    # A fresh image's package lists are empty: ask apt about candidates only after this.
    [ "$APT_UPDATED" -eq 1 ] && return 0
    APT_UPDATED=1
    run env DEBIAN_FRONTEND=noninteractive apt-get update -qq
}

has_candidate() {
    # True when apt knows an installable version of the package.
    local candidate
    candidate=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [ -n "$candidate" ] && [ "$candidate" != "(none)" ]
}

preflight() {
    step "Check the system"
    local codename=unknown arch
    # QRPOS_OS_RELEASE: another os-release file, for tests of what is said on each release
    local os_release=${QRPOS_OS_RELEASE:-/etc/os-release}
    if [ -r "$os_release" ]; then
        # shellcheck disable=SC1090
        codename=$(. "$os_release" && echo "${VERSION_CODENAME:-unknown}")
    fi
    arch=$(uname -m)
    note "OS release: $codename, architecture: $arch"
    # The two releases qrpos is built and tested for (docs/releases.md): the universal lock
    # holds a set for each one's Python and numpy, and pip picks it by the Python it runs.
    case "$codename" in
        bookworm) note "supported: Debian 12 / Raspberry Pi OS Bookworm (Python 3.11, numpy 1.24.2)" ;;
        trixie) note "supported: Debian 13 / Raspberry Pi OS Trixie (Python 3.13, numpy 2.2.4)" ;;
        *)
            warn "$codename is not a release qrpos supports (bookworm, trixie): the install goes on"
            warn "only if this system's python3-numpy is the version the lock holds for its Python;"
            warn "otherwise it stops at that check, after the system packages and before any"
            warn "release is made (docs/releases.md)"
            ;;
    esac
    [ "$arch" = aarch64 ] || warn "Raspberry Pi OS 64-bit (aarch64) is the supported target"
    if [ ! -r /proc/device-tree/model ] || ! grep -qa "Raspberry Pi" /proc/device-tree/model; then
        warn "this is not a Raspberry Pi: the camera module and tty1 kiosk may not apply"
    fi
    if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: run as root (sudo), or use --dry-run to see the plan" >&2
        exit 1
    fi
    command -v systemctl >/dev/null || warn "systemd (systemctl) not found"
}

system_packages() {
    step "Install system packages"
    # alsa-utils: `aplay` plays the till's tones (hardware.md, Sound)
    # libfribidi0: Pillow lays the slips' text out with raqm only where it finds it (the
    # bytes tests/peripherals/golden_slips.json pins); Raspberry Pi OS Lite may lack it
    local pkgs=(python3 python3-venv python3-numpy kbd console-setup systemd alsa-utils libfribidi0)
    apt_update_once
    # Trixie renamed the library for the 64-bit time_t transition.
    if has_candidate libzbar0t64; then pkgs+=(libzbar0t64); else pkgs+=(libzbar0); fi
    # gpiozero drives a buzzer on a GPIO pin (optional, seen through the venv's system
    # site packages like picamera2)
    if has_candidate python3-gpiozero; then pkgs+=(python3-gpiozero); fi
    # picamera2 and libcamera come from the Raspberry Pi archive, built for its numpy.
    if has_candidate python3-picamera2; then
        pkgs+=(python3-picamera2)
    else
        warn "python3-picamera2 is not in this machine's apt sources (not Raspberry Pi OS):"
        warn "only a USB webcam (OpenCV) will work as the camera here"
    fi
    note "packages: ${pkgs[*]}"
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${pkgs[@]}"
}

console_setup() {
    step "Console: a font with Mongolian Cyrillic and box drawing, no blanking"
    # Uni3 covers Slavic and non-Slavic Cyrillic (Ө ө Ү ү) plus box-drawing and block
    # characters; TerminusBold 16x32 reads well from a cashier's distance.
    local key value
    for pair in CHARMAP=UTF-8 CODESET=Uni3 FONTFACE=TerminusBold FONTSIZE=16x32; do
        key=${pair%%=*}
        value=${pair#*=}
        if [ -f "$CONSOLE_SETUP" ] && grep -q "^$key=\"$value\"" "$CONSOLE_SETUP"; then
            note "$key already $value"
        elif [ -f "$CONSOLE_SETUP" ] && grep -q "^$key=" "$CONSOLE_SETUP"; then
            run sed -i "s/^$key=.*/$key=\"$value\"/" "$CONSOLE_SETUP"
        else
            if [ "$DRY_RUN" -eq 1 ]; then
                printf '    + append %s="%s" to %s\n' "$key" "$value" "$CONSOLE_SETUP"
            else
                printf '%s="%s"\n' "$key" "$value" >>"$CONSOLE_SETUP"
            fi
        fi
    done
    # The kernel's own console blanking would turn the till's screen off after 10 min.
    local cmdline=""
    for candidate in /boot/firmware/cmdline.txt /boot/cmdline.txt; do
        if [ -f "$candidate" ]; then cmdline=$candidate; break; fi
    done
    if [ -z "$cmdline" ]; then
        note "no cmdline.txt (not a Pi): add consoleblank=0 to the kernel command line by hand"
    elif grep -q 'consoleblank=0' "$cmdline"; then
        note "consoleblank=0 already in $cmdline"
    else
        run sed -i '1 s/$/ consoleblank=0/' "$cmdline"
    fi
}

service_user() {
    step "Service user $SERVICE_USER (groups: camera, tones, buzzer, handheld scanner, printer)"
    local groups=video,audio,input,dialout,lp group
    # Debian 13's base system no longer has an "input" group (udev's package makes it; a
    # minimal Trixie root has none): made here so that useradd can add the kiosk to it;
    # udev's rules name the group, so it is the one the devices get when udev comes
    for group in ${groups//,/ }; do
        getent group "$group" >/dev/null || [ "$DRY_RUN" -eq 1 ] || run groupadd --system "$group"
    done
    getent group gpio >/dev/null && groups+=,gpio  # Raspberry Pi OS's /dev/gpiochip*
    if getent passwd "$SERVICE_USER" >/dev/null; then
        note "user $SERVICE_USER exists"
        run usermod --append --groups "$groups" "$SERVICE_USER"
    else
        run useradd --system --user-group --groups "$groups" --home-dir "$STATE_DIR" \
            --no-create-home --shell /usr/sbin/nologin --comment "qrpos kiosk" "$SERVICE_USER"
    fi
}

python_env() {
    step "Release $NEW_RELEASE: a venv beside the current one (sees the system's picamera2)"
    # the kiosk keeps running on the current release while this one is built
    run install -d -m 0755 "$PREFIX/releases"
    # --system-site-packages: picamera2/libcamera exist only as Debian packages.
    run "$SYSTEM_PYTHON" -m venv --system-site-packages "$NEW_RELEASE"
    # Every dependency comes from the hashed lock (the versions dev and CI test; pip
    # refuses any file whose sha256 is not in it). numpy is locked at the system's own
    # version: picamera2, simplejpeg and the libcamera bindings are compiled against it,
    # so the venv keeps using python3-numpy instead of shadowing it with another one.
    local numpy_version locked_numpy
    locked_numpy=$("$SYSTEM_PYTHON" "$here/deploy/locked_version.py" numpy "$LOCK") || locked_numpy=""
    numpy_version=$("$SYSTEM_PYTHON" -c 'import numpy; print(numpy.__version__)' 2>/dev/null) ||
        numpy_version=""
    if [ -z "$numpy_version" ] && [ "$DRY_RUN" -eq 1 ]; then
        numpy_version="<version of python3-numpy, installed above>"
    fi
    if [ -z "$numpy_version" ]; then
        echo "install.sh: $SYSTEM_PYTHON cannot import numpy (python3-numpy)" >&2
        exit 1
    fi
    note "system numpy $numpy_version, locked numpy==$locked_numpy"
    if [ "$DRY_RUN" -eq 0 ] && [ "$numpy_version" != "$locked_numpy" ]; then
        echo "install.sh: the system's numpy $numpy_version is not the locked $locked_numpy:" \
            "this lock is for Raspberry Pi OS / Debian 12; pin numpy==$numpy_version in" \
            "deploy/constraints.txt and run bash deploy/lock.sh (docs/dependencies.md)" >&2
        exit 1
    fi
    # --wheelhouse: the same files, downloaded beforehand (an arm64 image is built under
    # qemu-user, where a build was still in pip, emulated, after 50 minutes)
    local from_index=()
    if [ -n "$WHEELHOUSE" ]; then
        [ "$DRY_RUN" -eq 1 ] || [ -d "$WHEELHOUSE" ] ||
            { echo "install.sh: no wheelhouse $WHEELHOUSE" >&2; exit 1; }
        note "wheels from $WHEELHOUSE (no index)"
        from_index=(--no-index --find-links "$WHEELHOUSE")
    fi
    run "$NEW_RELEASE/bin/python" -m pip install --quiet "${from_index[@]}" \
        --require-hashes -r "$LOCK"
    # qrpos itself, with no dependency resolution and no index: everything is in place
    run "$NEW_RELEASE/bin/python" -m pip install --quiet --no-deps --no-build-isolation \
        --no-index "$SOURCE"
    # `qrpos doctor`, `qrpos pair` and the rest on every root shell's PATH
    run ln -sfn "$VENV/bin/qrpos" /usr/local/bin/qrpos
    if [ -f "$here/hardware.md" ]; then
        run install -D -m 0644 "$here/hardware.md" "$PREFIX/share/hardware.md"
    fi
}

configuration() {
    step "Configuration $CONFIG_DIR/config.toml and state $STATE_DIR"
    run install -d -m 0755 "$CONFIG_DIR"
    if [ -f "$CONFIG_DIR/config.toml" ]; then
        note "$CONFIG_DIR/config.toml exists: kept as is"
    else
        write_file "$CONFIG_DIR/config.toml" 0644 <<'EOF'
# qrpos configuration (see `qrpos --help`). The password is NOT here: it is the
# encrypted systemd credential written by deploy/provision.sh.
# base_url = "https://pay.example.mn"     # set by deploy/provision.sh
state_dir = "/var/lib/qrpos"
language = "mn"

[scanner]
source = "auto"
decoder = "zbar"
EOF
    fi
    run install -d -m 0700 -o "$SERVICE_USER" -g "$SERVICE_USER" "$STATE_DIR"
    # The credential store: root only; systemd decrypts for the unit at start.
    run install -d -m 0700 "$CREDSTORE"
    # node_exporter's textfile collector reads the kiosk's metrics from here (qrpos.metrics)
    run install -d -m 0755 -o "$SERVICE_USER" -g "$SERVICE_USER" "$TEXTFILE_DIR"
}

systemd_unit() {
    step "systemd unit $UNIT_DEST"
    run install -m 0644 "$here/systemd/$UNIT_NAME" "$UNIT_DEST"
    # the pairing screen's way to root: a socket (group qrpos) whose connections run
    # provision.sh, which verifies again and stores the encrypted credential
    run install -m 0644 "$here/systemd/qrpos-pair.socket" /etc/systemd/system/qrpos-pair.socket
    run install -m 0644 "$here/systemd/qrpos-pair@.service" \
        "/etc/systemd/system/qrpos-pair@.service"
    run install -m 0755 "$here/deploy/provision.sh" /usr/local/sbin/qrpos-provision
    run install -m 0755 "$here/deploy/pair-store.sh" /usr/local/sbin/qrpos-pair-store
    # the kiosk waits for the first NTP sync, but never for ever
    run install -d -m 0755 /etc/systemd/system/systemd-time-wait-sync.service.d
    run install -m 0644 "$here/systemd/systemd-time-wait-sync.service.d/qrpos-bounded.conf" \
        /etc/systemd/system/systemd-time-wait-sync.service.d/qrpos-bounded.conf
    # a USB receipt printer reachable by the lp group (python-escpos over libusb)
    run install -D -m 0644 "$here/systemd/udev/60-qrpos-printer.rules" \
        /etc/udev/rules.d/60-qrpos-printer.rules
    if in_chroot; then
        note "building an image: no systemd runs here, so nothing is reloaded or restarted;"
        note "the unit is enabled for the first boot"
    else
        run systemctl daemon-reload
    fi
    run systemctl enable "$UNIT_NAME" qrpos-pair.socket
    # The kiosk owns tty1 (the unit has Conflicts=getty@tty1); other VTs keep a login.
    run systemctl disable getty@tty1.service
    run systemctl set-default multi-user.target
    if in_chroot; then
        note "first boot: the kiosk opens on its pairing screen (or: sudo $here/deploy/provision.sh)"
    elif [ -f "$CREDSTORE/qrpos-password" ]; then
        note "terminal already paired: the kiosk restarts on the new release (next step)"
    else
        note "not paired yet: pair on the kiosk's screen, or run sudo $here/deploy/provision.sh"
    fi
}

# A build that stopped half-way (pip failed, the disk filled) is not left behind as a
# release: release.sh would count it among those it keeps.
RELEASE_ACTIVATED=0
discard_unfinished_release() {
    if [ "$DRY_RUN" -eq 0 ] && [ "$RELEASE_ACTIVATED" -eq 0 ] && [ -d "$NEW_RELEASE" ] &&
        [ "$(readlink -f "$VENV" 2>/dev/null)" != "$NEW_RELEASE" ]; then
        rm -rf -- "$NEW_RELEASE"
        warn "the unfinished release $NEW_RELEASE was removed"
    fi
}
trap discard_unfinished_release EXIT

activate_release() {
    step "Switch to $NEW_RELEASE, health gate, rollback if it fails"
    # from here the release is release.sh's: kept, current or rolled back from
    RELEASE_ACTIVATED=1
    # release.sh restarts the kiosk when it runs (never in an image being built) and keeps
    # the previous release; the outbox is never touched
    if in_chroot; then
        QRPOS_RESTART=0 run bash "$here/deploy/release.sh" activate "$NEW_RELEASE"
    else
        run bash "$here/deploy/release.sh" activate "$NEW_RELEASE"
    fi
}

preflight
system_packages
console_setup
service_user
python_env
configuration
systemd_unit
activate_release
step "Done"
if [ "$DRY_RUN" -eq 1 ]; then note "dry run: nothing was changed"; fi
