#!/usr/bin/env bash
# shellcheck disable=SC2016  # the hooks run in mmdebstrap's shell: $1 is the root it passes
# Build a card image of a qrpos till: a partitioned disk (boot + root) of Debian, with
# qrpos installed by the same `deploy/install.sh --image-build` the roots use.
#
#   sudo deploy/image/build.sh [--arch amd64|arm64] [--suite trixie|bookworm]
#                              [--out FILE] [--work DIR] [--size-slack MIB]
#                              [--ssh-key FILE.pub]
#
# amd64 is for fast checks under QEMU (benchmarks/image_boot.py); arm64 is the Pi's
# (Debian's own linux-image-arm64 and raspi-firmware from non-free-firmware). No loop
# device is needed: mmdebstrap makes the root in a directory, `mke2fs -d` makes the root
# file system from it, mkfs.vfat + mtools the boot partition, sfdisk partitions a sparse
# file and dd puts both in place.
#
# The image holds no secret: no terminal credential, no manager PIN, nothing in
# /var/lib/qrpos, an empty /etc/machine-id, no SSH host keys, no random seed. On its
# first boot (deploy/image/firstboot.sh) a card grows its root partition to the card,
# and makes its own SSH host keys; systemd makes its machine-id, and the kiosk its till
# id (src/qrpos/identity.py, machine.json) from it.
#
# --ssh-key: the installer's public key(s) for root over SSH (provision.sh over SSH); the
# image has no password login (root is locked) and no key otherwise.
#
# Prints the image's size and the build time. Needs root, the Debian mirror and PyPI,
# mmdebstrap, e2fsprogs, dosfstools, mtools, fdisk; for arm64 on another machine,
# qemu-user-static with its binfmt handler (arm64 runs under emulation: slow).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ARCH=amd64
SUITE=trixie
OUT=""
WORK=""
SSH_KEY=""
SLACK_MIB=768   # free room in the root file system as built (the card grows it at boot)
BOOT_MIB=256
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOT_LABEL=qrpos-root
BOOT_LABEL=QRPOS-BOOT

while [ $# -gt 0 ]; do
    case "$1" in
        --arch) ARCH=${2:?}; shift ;;
        --suite | --release) SUITE=${2:?}; shift ;;
        --out) OUT=${2:?}; shift ;;
        --work) WORK=${2:?}; shift ;;
        --size-slack) SLACK_MIB=${2:?}; shift ;;
        --ssh-key) SSH_KEY=${2:?}; shift ;;
        -h | --help) sed -n '3,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done
case "$ARCH" in amd64 | arm64) ;; *) echo "build.sh: --arch amd64 or arm64" >&2; exit 64 ;; esac
case "$SUITE" in bookworm | trixie) ;; *) echo "build.sh: --suite bookworm or trixie" >&2; exit 64 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "build.sh: run as root (the root's files keep their owners)" >&2; exit 1; }
for tool in mmdebstrap mke2fs mkfs.vfat mcopy mmd sfdisk; do
    command -v "$tool" >/dev/null ||
        { echo "build.sh: $tool not found (apt install mmdebstrap e2fsprogs dosfstools mtools fdisk)" >&2; exit 1; }
done

if [ -n "$SSH_KEY" ]; then
    # public keys only: one per line, each "TYPE BASE64 [comment]"
    grep -qv -E '^(ssh-|ecdsa-|sk-)[a-z0-9@.-]+ [A-Za-z0-9+/=]+( .*)?$' "$SSH_KEY" &&
        { echo "build.sh: $SSH_KEY is not a file of SSH public keys" >&2; exit 64; }
    [ -s "$SSH_KEY" ] || { echo "build.sh: $SSH_KEY is empty" >&2; exit 64; }
fi
WORK=${WORK:-/var/tmp/qrpos-image-$SUITE-$ARCH}
OUT=${OUT:-$WORK.img}
ROOT=$WORK/root
LOG=$WORK/build.log
started=$SECONDS
mkdir -p "$WORK"
# a build killed half-way leaves mmdebstrap's mounts (/proc, /sys, /dev/pts, the boot
# partition's bind mount) in its root: taken down first, and rm never crosses into one
awk -v root="$ROOT/" 'index($2, root) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r mount; do umount "$mount" || umount -l "$mount"; done
if awk -v root="$ROOT/" 'index($2, root) == 1 {found=1} END {exit !found}' /proc/mounts; then
    echo "build.sh: $ROOT still has file systems mounted in it: not removed" >&2
    exit 1
fi
rm -rf --one-file-system "$ROOT" "$WORK/root.ext4" "$WORK/boot.vfat"
: >"$LOG"
say() { printf '== %s\n' "$*"; }

# --- the root --------------------------------------------------------------------------
# what a till needs to boot, reach its service and be reached by an installer; qrpos's
# own packages are install.sh's to choose
pkgs=systemd,systemd-sysv,udev,dbus,kmod,initramfs-tools,e2fsprogs,cloud-guest-utils,fdisk
pkgs+=,systemd-timesyncd,systemd-resolved,iproute2,openssh-server,ca-certificates,sudo
pkgs+=,less,nano,python3
components=main
case "$ARCH" in
    amd64) pkgs+=,linux-image-amd64 ;;
    # the Pi's boot files: raspi-firmware is in non-free-firmware
    arm64) pkgs+=,linux-image-arm64,raspi-firmware,firmware-brcm80211; components=main,non-free-firmware ;;
esac
rev=$(git -C "$here" rev-parse --short HEAD)

# --- the lock's wheels, downloaded on the host -------------------------------------------
# pip in the root (emulated for arm64) only installs them: --no-index, hashes checked as
# ever. The lock's entries are chosen for the card's Python, not the host's (lock_for.py);
# every one has a binary wheel for both arches (no compiler under emulation). Kept in
# $WORK/wheelhouse between builds while the lock is the same.
case "$SUITE" in trixie) py=3.13 ;; bookworm) py=3.11 ;; esac
case "$ARCH" in amd64) machine=x86_64 ;; arm64) machine=aarch64 ;; esac
WHEELS=$WORK/wheelhouse
lock_id="$(sha256sum "$here/deploy/requirements.lock" | cut -c1-16) cp$py $machine"
if [ "$(cat "$WHEELS/.lock-id" 2>/dev/null)" != "$lock_id" ]; then
    say "wheelhouse: the lock's wheels for CPython $py on $machine (host pip)"
    rm -rf "$WHEELS"
    mkdir -p "$WHEELS"
    python3 "$here/deploy/image/lock_for.py" "$here/deploy/requirements.lock" "$py" "$machine" \
        >"$WORK/lock-$machine.txt"
    platforms=(--platform "linux_$machine" --platform "manylinux2014_$machine")
    for minor in $(seq 17 36); do platforms+=(--platform "manylinux_2_${minor}_$machine"); done
    [ "$machine" = x86_64 ] && platforms+=(--platform manylinux1_x86_64 --platform manylinux2010_x86_64)
    if ! python3 -m pip download --quiet --disable-pip-version-check --require-hashes --no-deps \
        --only-binary=:all: "${platforms[@]}" --implementation cp --python-version "$py" \
        --abi "cp${py/./}" --abi abi3 --abi none -d "$WHEELS" -r "$WORK/lock-$machine.txt" \
        >>"$LOG" 2>&1; then
        tail -20 "$LOG"
        echo "build.sh: FAILED downloading the wheels (a package with no $machine wheel?)" >&2
        exit 1
    fi
    echo "$lock_id" >"$WHEELS/.lock-id"
fi
say "wheelhouse $WHEELS: $(find "$WHEELS" -name '*.whl' | wc -l) wheels"
# /boot/firmware is a mount point while the root is built, as on a card: raspi-firmware's
# kernel hook writes the Pi's boot files only into a mounted /boot/firmware
trap 'umount "$ROOT/boot/firmware" 2>/dev/null || true' EXIT
say "mmdebstrap $SUITE $ARCH into $ROOT (qrpos $rev; log: $LOG)"
# the customize hook runs in the finished root, with /proc, /sys and /dev mounted: the
# checkout's committed files go to /opt/qrpos-src and install.sh runs from there, as in
# benchmarks/install_in_root.sh. pip trusts the host's CA bundle (a proxy's own CA).
# resolv.conf is the host's for the build (systemd-resolved made it a link to its stub,
# which does not run in a chroot) and the link again afterwards.
# dpkg without fsync: the root is a build directory that mke2fs copies once whole, and
# under qemu-user every package's syncs were a large part of the arm64 build's time
# (eatmydata for the package scripts too, where mmdebstrap ships its hook)
# (its customize step, which takes the wrapper out again, runs after the others)
eatmydata=/usr/share/mmdebstrap/hooks/eatmydata
late=()
[ -f "$eatmydata/extract.sh" ] && command -v dpkg-architecture >/dev/null && late+=(--hook-dir="$eatmydata")
if ! mmdebstrap --mode=root --variant=minbase --arch="$ARCH" --components="$components" \
    --dpkgopt=force-unsafe-io \
    --include="$pkgs" \
    --essential-hook='mkdir -p "$1/boot/firmware" && mount --bind "$1/boot/firmware" "$1/boot/firmware"' \
    --customize-hook='mkdir -p "$1/opt/qrpos-src"' \
    --customize-hook="git -C '$here' archive HEAD | tar -x -C \"\$1/opt/qrpos-src\"" \
    --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1/etc/host-ca-certificates.crt"' \
    --customize-hook='rm -f "$1/etc/resolv.conf"; cp /etc/resolv.conf "$1/etc/resolv.conf"' \
    --customize-hook="cp -r '$WHEELS' \"\$1/var/tmp/qrpos-wheelhouse\"" \
    --customize-hook='chroot "$1" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/host-ca-certificates.crt bash /opt/qrpos-src/deploy/install.sh --image-build --wheelhouse /var/tmp/qrpos-wheelhouse' \
    --customize-hook='rm -rf "$1/var/tmp/qrpos-wheelhouse"' \
    --customize-hook="'$here/deploy/image/customize.sh' \"\$1\" '$ARCH' '$ROOT_LABEL' '$BOOT_LABEL' '$SSH_KEY'" \
    --customize-hook='umount "$1/boot/firmware"' "${late[@]}" \
    "$SUITE" "$ROOT" "$MIRROR" >>"$LOG" 2>&1; then
    tail -40 "$LOG"
    echo "build.sh: FAILED building the root (whole log: $LOG)" >&2
    exit 1
fi
grep -E '^(==>|    WARNING)' "$LOG" | sed 's/^/   /' || true

# --- the boot partition ----------------------------------------------------------------
say "boot partition ($BOOT_MIB MiB, vfat $BOOT_LABEL): $(find "$ROOT/boot/firmware" -type f | wc -l) files"
BOOT=$WORK/boot.vfat
rm -f "$BOOT"
truncate -s "${BOOT_MIB}M" "$BOOT"
mkfs.vfat -F 32 -n "$BOOT_LABEL" "$BOOT" >>"$LOG"
# everything under the root's /boot/firmware (fstab mounts the partition there), then
# emptied in the root: the partition is the one copy
if [ -n "$(ls -A "$ROOT/boot/firmware")" ]; then
    MTOOLS_SKIP_CHECK=1 mcopy -s -p -i "$BOOT" "$ROOT"/boot/firmware/* ::/
fi
find "$ROOT/boot/firmware" -mindepth 1 -delete

# --- the root file system ------------------------------------------------------------
used_kib=$(du -s -k -x "$ROOT" | cut -f1)
root_mib=$(((used_kib / 1024) * 115 / 100 + SLACK_MIB))
say "root file system: $((used_kib / 1024)) MiB used, ${root_mib} MiB made (ext4 $ROOT_LABEL)"
RFS=$WORK/root.ext4
rm -f "$RFS"
truncate -s "${root_mib}M" "$RFS"
mke2fs -q -t ext4 -L "$ROOT_LABEL" -d "$ROOT" -E root_owner=0:0 "$RFS" >>"$LOG" 2>&1 ||
    { tail -20 "$LOG"; echo "build.sh: mke2fs failed" >&2; exit 1; }

# --- the disk: MBR (the Pi's firmware reads it), 1: boot (FAT32 LBA), 2: root ------------
say "disk image $OUT"
# made as $OUT.part and renamed once whole: a build cut short leaves no image that looks
# finished (tests/installer/test_image_contents.py reads every /var/tmp/qrpos-image-*.img)
PART=$OUT.part
rm -f "$OUT" "$PART"
disk_mib=$((1 + BOOT_MIB + root_mib))
truncate -s "${disk_mib}M" "$PART"
sfdisk --quiet "$PART" <<PARTS
label: dos
unit: sectors
start=2048, size=$((BOOT_MIB * 2048)), type=c, bootable
start=$(((1 + BOOT_MIB) * 2048)), size=$((root_mib * 2048)), type=83
PARTS
dd if="$BOOT" of="$PART" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$RFS" of="$PART" bs=1M seek=$((1 + BOOT_MIB)) conv=notrunc,sparse status=none
mv -f "$PART" "$OUT"
rm -f "$BOOT" "$RFS"
sfdisk --dump "$OUT" | sed -n '/^\//s/^/   /p'

elapsed=$((SECONDS - started))
apparent=$(stat -c %s "$OUT")
allocated=$(($(stat -c %b "$OUT") * $(stat -c %B "$OUT")))
printf 'image: %s\n' "$OUT"
printf 'size: %d MiB (%d MiB of data: a sparse file; xz or zstd it to ship)\n' \
    $((apparent / 1048576)) $((allocated / 1048576))
printf 'build time: %d s (%s %s, qrpos %s)\n' "$elapsed" "$SUITE" "$ARCH" "$rev"
