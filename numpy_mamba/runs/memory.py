"""Keep freed memory at the top of the heap for the next training step (glibc only).

A training step allocates and frees the same arrays at every step: at three layers dozens of
(l+1, B, d+1) activations of a few hundred kilobytes each, between the minibatch's own arrays.
glibc's malloc hands the free top of its heap back to the system as soon as enough of it is
free, and the next step takes it back page by page, each page zeroed on a fault.  Measured once
by hand on a 2-core AMD EPYC VM (numpy 2.4.6), a three-layer Mamba at l = 20, B = 64: 14.0 ms a
step in ``sgd.train``, 9.5 ms with the padding below; ``bench``'s back-to-back steps do not
trigger it (9.2 ms either way), and the full ablation took 913 s without it, 777 s with it.

``keep_heap_padding`` sets glibc's M_TOP_PAD, the memory kept at the top of the heap whenever it
grows or shrinks, so a run reuses its pages.  It changes no number, only where arrays live; it
is process-wide, so the library never calls it: the experiment commands do, in their own
process and in every worker (``jobs.py``).  Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import platform

M_TOP_PAD = -2                    # mallopt's parameter number, <malloc.h>
TOP_PAD = 64 << 20                # bytes: a few steps' worth of arrays at B = 1024


def keep_heap_padding(pad: int = TOP_PAD) -> bool:
    """Ask glibc's malloc to keep ``pad`` bytes at the top of the heap; True if it took it."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_TOP_PAD, pad) == 1
