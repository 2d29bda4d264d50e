#!/usr/bin/env bash
# Called by deploy/image/build.sh (an mmdebstrap customize hook) on the finished root,
# from outside it:  customize.sh ROOT ARCH ROOT_LABEL BOOT_LABEL [SSH_PUBLIC_KEYS]
# Makes the root a card: fstab, network, the first-boot unit, the boot files; then
# removes everything that must differ between two cards or must not leave the builder.
set -euo pipefail
root=$1 arch=$2 root_label=$3 boot_label=$4 ssh_keys=${5:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
note() { printf '    customize: %s\n' "$*"; }

# --- mounts, name, network ---------------------------------------------------------------
cat >"$root/etc/fstab" <<FSTAB
# the card: deploy/image/build.sh
LABEL=$root_label  /              ext4  defaults,noatime,errors=remount-ro  0 1
LABEL=$boot_label  /boot/firmware vfat  defaults,noatime,umask=0022,nofail  0 2
FSTAB
echo qrpos >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tqrpos\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
    >"$root/etc/hosts"
install -d "$root/etc/systemd/network"
cat >"$root/etc/systemd/network/20-wired.network" <<'NET'
# any wired interface by DHCP (deploy/image/customize.sh); Wi-Fi is the installer's
[Match]
Name=en* eth*
[Network]
DHCP=yes
NET
if [ -x "$root/usr/bin/systemctl" ]; then
    chroot "$root" systemctl enable systemd-networkd.service systemd-resolved.service \
        systemd-timesyncd.service >/dev/null 2>&1
else
    note "no systemctl in $root: networkd, resolved and timesyncd not enabled"
fi
# the kiosk waits for network-online.target: one interface up is enough
install -d "$root/etc/systemd/system/systemd-networkd-wait-online.service.d"
cat >"$root/etc/systemd/system/systemd-networkd-wait-online.service.d/qrpos-any.conf" <<'WAIT'
[Service]
ExecStart=
ExecStart=/usr/lib/systemd/systemd-networkd-wait-online --any --timeout=30
WAIT
ln -sfn ../run/systemd/resolve/stub-resolv.conf "$root/etc/resolv.conf"
# no interactive first-boot questions on the till's screen (locale, root password)
ln -sfn /dev/null "$root/etc/systemd/system/systemd-firstboot.service"
echo 'LANG=C.UTF-8' >"$root/etc/locale.conf"
# the caches of /usr (ld.so.cache, the journal's catalog) were made by the packages: not
# again on the first boot (ConditionNeedsUpdate= compares these files' times with /usr's)
touch -r "$root/usr" "$root/etc/.updated" "$root/var/.updated"

# --- first boot: grow the root, host keys; pairing from a system credential -------------
install -m 0755 "$here/firstboot.sh" "$root/usr/local/sbin/qrpos-firstboot"
install -m 0755 "$here/pair-credential.sh" "$root/usr/local/sbin/qrpos-pair-credential"
install -m 0644 "$here/qrpos-firstboot.service" "$root/etc/systemd/system/"
install -m 0644 "$here/qrpos-pair-credential.service" "$root/etc/systemd/system/"
install -D -m 0755 "$here/qrpos-console-generator" \
    "$root/etc/systemd/system-generators/qrpos-console"
# enabled as systemctl would (WantedBy=multi-user.target), without running anything in the root
install -d "$root/etc/systemd/system/multi-user.target.wants"
for unit in qrpos-firstboot.service qrpos-pair-credential.service; do
    ln -sfn "/etc/systemd/system/$unit" "$root/etc/systemd/system/multi-user.target.wants/$unit"
done

# the installer's public keys, when given: root over SSH with a key only (sshd's default)
if [ -n "$ssh_keys" ]; then
    install -d -m 0700 "$root/root/.ssh"
    install -m 0600 "$ssh_keys" "$root/root/.ssh/authorized_keys"
    note "root's authorized_keys: $(wc -l <"$ssh_keys") key(s) from $ssh_keys"
fi

# --- boot files: what the boot partition holds (build.sh copies /boot/firmware) ----------
kernel=$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n 1)
version=${kernel##*/vmlinuz-}
if [ -z "$version" ] || [ ! -f "$root/boot/initrd.img-$version" ]; then
    echo "customize.sh: no kernel and initrd in $root/boot" >&2
    exit 1
fi
note "kernel $version"
cmdline="root=LABEL=$root_label rootfstype=ext4 rw rootwait fsck.repair=yes consoleblank=0"
case "$arch" in
    amd64)
        # booted by QEMU's -kernel/-initrd from this partition (benchmarks/image_boot.py)
        cp "$kernel" "$root/boot/firmware/vmlinuz"
        cp "$root/boot/initrd.img-$version" "$root/boot/firmware/initrd.img"
        echo "$cmdline console=tty1" >"$root/boot/firmware/cmdline.txt"
        ;;
    arm64)
        # raspi-firmware's kernel hook put the Pi's firmware, the kernel, initrd and device
        # trees here; its cmdline.txt names the root by /etc/default/raspi-firmware and
        # ends with /etc/default/raspi-extra-cmdline, both read again by the Pi's kernel
        # upgrades (its CONSOLES="auto" picks the console per Pi model: kept). The hook
        # takes its dpkg action from DEB_MAINT_PARAMS and does nothing without "configure"
        # (a build that called it bare kept the cmdline.txt of the package's install:
        # root=/dev/mmcblk0p2).
        sed -i -e "s|^#\?ROOTPART=.*|ROOTPART=LABEL=$root_label|" "$root/etc/default/raspi-firmware"
        echo "consoleblank=0" >"$root/etc/default/raspi-extra-cmdline"
        chroot "$root" env DEB_MAINT_PARAMS=configure \
            /etc/kernel/postinst.d/z50-raspi-firmware "$version" >/dev/null ||
            note "raspi-firmware's hook failed (see the Pi section of docs/installing.md)"
        # QEMU -M virt boots the same kernel and initrd (benchmarks/image_boot.py)
        cp "$kernel" "$root/boot/firmware/vmlinuz"
        cp "$root/boot/initrd.img-$version" "$root/boot/firmware/initrd.img"
        if [ -f "$root/boot/firmware/cmdline.txt" ]; then
            grep -q consoleblank=0 "$root/boot/firmware/cmdline.txt" ||
                sed -i '1 s/$/ consoleblank=0/' "$root/boot/firmware/cmdline.txt"
        else
            echo "$cmdline console=serial0,115200 console=tty1" >"$root/boot/firmware/cmdline.txt"
        fi
        # a card whose kernel line names another root than its own label is not shipped
        # (a Pi booting from USB, or a card in a reader, has no mmcblk0p2)
        if ! grep -q "root=LABEL=$root_label " "$root/boot/firmware/cmdline.txt"; then
            echo "customize.sh: cmdline.txt does not name root=LABEL=$root_label:" >&2
            cat "$root/boot/firmware/cmdline.txt" >&2
            exit 1
        fi
        ;;
esac

# --- nothing that must differ between two cards, nothing from the builder ----------------
"$here/scrub.sh" "$root"
