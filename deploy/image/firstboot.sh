#!/bin/sh
# A card's first boot (qrpos-firstboot.service, from deploy/image/): grow the root
# partition and its file system to the card, and make this card's own SSH host keys.
# Every step is idempotent: a boot cut short (the plug pulled) does it again next time.
# systemd makes the machine-id (the image's is empty), and the kiosk its till id from it.
set -eu
src=$(findmnt -n -o SOURCE /)
dev=$(readlink -f "$src")
name=${dev##*/}
if [ -r "/sys/class/block/$name/partition" ]; then
    part=$(cat "/sys/class/block/$name/partition")
    disk=/dev/$(basename "$(readlink -f "/sys/class/block/$name/..")")
    # growpart: 0 grown, 1 nothing to grow (NOCHANGE), anything else an error
    rc=0
    growpart "$disk" "$part" || rc=$?
    case "$rc" in
        0) echo "qrpos-firstboot: $disk partition $part grown to the card" ;;
        1) echo "qrpos-firstboot: $disk partition $part already fills the card" ;;
        *) echo "qrpos-firstboot: growpart $disk $part failed ($rc)" >&2; exit 1 ;;
    esac
    resize2fs "$dev"
else
    echo "qrpos-firstboot: the root $dev is not a partition: not grown"
fi
ssh-keygen -A
echo "qrpos-firstboot: SSH host keys: $(find /etc/ssh -name "ssh_host_*_key.pub" | wc -l) made for this card"
install -d -m 0755 /var/lib/qrpos-image
touch /var/lib/qrpos-image/firstboot-done
