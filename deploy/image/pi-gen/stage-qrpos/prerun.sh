#!/bin/bash -e
# pi-gen: this stage starts from the previous stage's root (stage2: Raspberry Pi OS Lite)
if [ ! -d "${ROOTFS_DIR}" ]; then
    copy_previous
fi
