#!/bin/bash -e
# pi-gen, inside the root (on_chroot): the same install as every image and root
bash /opt/qrpos-src/deploy/install.sh --image-build
