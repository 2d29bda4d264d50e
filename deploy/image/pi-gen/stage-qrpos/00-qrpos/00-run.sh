#!/bin/bash -e
# pi-gen, on the build host: this checkout's committed files into the root, where
# 01-run-chroot.sh installs from them (as deploy/image/build.sh and
# benchmarks/install_in_root.sh do). QRPOS_SRC: another checkout than the one this stage
# is in.
src=${QRPOS_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../.." && pwd)}
[ -f "$src/deploy/install.sh" ] || { echo "stage-qrpos: no qrpos checkout at $src" >&2; exit 1; }
rm -rf "${ROOTFS_DIR:?}/opt/qrpos-src"
mkdir -p "${ROOTFS_DIR}/opt/qrpos-src"
git -C "$src" archive HEAD | tar -x -C "${ROOTFS_DIR}/opt/qrpos-src"
echo "stage-qrpos: qrpos $(git -C "$src" rev-parse --short HEAD) in ${ROOTFS_DIR}/opt/qrpos-src"
