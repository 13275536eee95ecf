"""Keep freed memory for reuse: no page-fault storm at every step of a loop.

glibc's malloc gives large freed blocks back to the kernel: blocks above its mmap threshold
are unmapped, and a free stretch at the top of the heap above its trim threshold is trimmed.
Both thresholds adapt to the largest single block freed so far, not to what a step frees in
all, so a step whose temporaries are many medium arrays (a gradient: one per layer and
residual) has its memory returned and faulted back in, page by page, on every call. On the
2-core VM this project is measured on, ten 1 MB temporaries per step cost 2,528 page faults at
every step, and a pmap training step spent 5 of its 9.6 ms in them. At import functrans sets
the mmap threshold to glibc's maximum (32 MiB) and the trim threshold to 128 MiB, so freed
memory up to that size stays in the process for the next step; larger arrays are still
mapped and unmapped (NumPy asks for huge pages there). The setting is process-wide, as is
the allocator: ``FUNCTRANS_MALLOC_TUNING=0`` leaves glibc's defaults, and glibc's own
``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``/``GLIBC_TUNABLES`` settings are never
overridden::

    >>> keep_freed_memory()   # on Linux with glibc (False elsewhere, or when told not to)
    True
"""
from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's maximum on 64-bit systems
TRIM_THRESHOLD = 128 << 20

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (once, at import); whether they were set."""
    if not sys.platform.startswith("linux"):
        return False
    if os.environ.get("FUNCTRANS_MALLOC_TUNING", "1") in ("", "0"):
        return False
    if any(k in os.environ for k in _USER_SETTINGS) or \
            "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False  # the user chose
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl ignores these parameters)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
