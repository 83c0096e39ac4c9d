"""Freed kernel buffers kept in the process heap (glibc's ``mallopt``), not given back to the OS.

Compiled kernels allocate their intermediates with ``malloc`` on every call (an im2col
buffer, a model's activations between kernels). glibc serves blocks above its mmap
threshold with a fresh ``mmap`` and returns them (and the heap's free top, past the trim
threshold) to the OS on ``free``: every call then page-faults its buffers in again. A BERT
encoder layer (d 256) at batch 8 ran in 22-28 ms that way on 2 cores, 10-12 ms with the
heap kept (its kernels alone: 12 ms). :func:`keep_heap` sets three of malloc's parameters
once, when the first compiled module is loaded: the mmap threshold at its largest (32 MB)
and no mmap'ed blocks at all (``M_MMAP_MAX`` 0: glibc still maps memory when the heap
cannot grow), so blocks of any size come from the heap, and the trim threshold at 1 GB, so
they stay there for the next call, as a caching allocator would keep them; the process
keeps its peak heap size. Blocks above 32 MB were mapped and unmapped on every call until
``M_MMAP_MAX``: MobileNet-v2 at batch 8 has a 38.5 MB activation (96 channels at 112x112),
and its call spent a sixth of its time in the kernel's page-fault handler (89 -> 56-59 ms
on 2 cores without it). ``MLC_KEEP_HEAP=0`` leaves malloc as it is;
other C libraries (no ``mallopt``) are left alone.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys

__all__ = ["keep_heap", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

log = logging.getLogger(__name__)

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4
#: blocks up to this size come from the heap (glibc's maximum on 64-bit systems)
MMAP_THRESHOLD = 32 << 20
#: the heap's free top is given back to the OS only past this size
TRIM_THRESHOLD = 1 << 30


@functools.lru_cache(maxsize=1)
def keep_heap() -> bool:
    """Raise glibc's mmap and trim thresholds, no mmap'ed blocks (once per process); whether they were set."""
    if os.environ.get("MLC_KEEP_HEAP", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt (musl)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = (bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_MMAP_MAX, 0))
          and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)))
    log.debug("malloc keeps freed blocks in the heap (mmap threshold %d, no mmap'ed blocks, trim threshold %d): %s",
              MMAP_THRESHOLD, TRIM_THRESHOLD, ok)
    return ok
