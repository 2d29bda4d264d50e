"""qrpos: a Raspberry Pi point-of-sale kiosk that charges meal-benefit wallets by QR code."""

import os as _os

# One BLAS thread per process, set before numpy loads (a value the environment already has
# is kept). numpy's OpenBLAS starts a thread per core; for the decoder's small matrices
# (the locate pass's perspective fits) its threads wait on each other, and when every core
# is busy (the till, the camera, the display; or a loaded test machine) the waits turn into
# stalls: the locate test took 232 s instead of 9.5 s beside two busy processes on 2 cores
# (`benchmarks/blas_threads.py`). The kiosk runs its work on its own threads already.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    _os.environ.setdefault(_name, "1")

__version__ = "0.1.0"
