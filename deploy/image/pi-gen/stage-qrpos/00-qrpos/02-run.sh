#!/bin/bash -e
# pi-gen, on the build host: nothing that must differ between two cards, nothing secret
# (pi-gen's export stage empties the machine-id too; Raspberry Pi OS makes host keys and
# grows the root on its first boot by its own services)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$here/../scrub.sh" "${ROOTFS_DIR:?}"
