"""Device memory profiles: the live functrans arrays (NumPy buffers in host memory) in pprof's
format, as ``jax.profiler.device_memory_profile`` returns it (a gzipped ``profile.proto``;
``go tool pprof`` and ``pprof`` read it). Samples are grouped by array type, e.g.
``float32[100,100]``, each with two values: the arrays' count and their bytes.

    >>> import gzip
    >>> from functrans.profiling import memory
    >>> x = fnp.ones((100, 100), fnp.float32)
    >>> profile = memory.device_memory_profile()
    >>> b"float32[100,100]" in gzip.decompress(profile)
    True
"""
from __future__ import annotations

import gc
import gzip
import time

from functrans.core.array import Array

__all__ = ["device_memory_profile", "save_device_memory_profile"]


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64 fields: two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, value) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _live_arrays():
    sizes: dict = {}
    for obj in gc.get_objects():
        if type(obj) is Array:
            v = obj._value
            key = f"{v.dtype.name}[{','.join(map(str, v.shape))}]"
            count, nbytes = sizes.get(key, (0, 0))
            sizes[key] = (count + 1, nbytes + v.nbytes)
    return sizes


def device_memory_profile(backend: str | None = None) -> bytes:
    """The live arrays' memory as a gzipped pprof profile (``backend`` is accepted: all
    functrans arrays live in host memory)."""
    strings = ["", "allocations", "count", "space", "bytes", "kind", "buffer"]
    index = {s: i for i, s in enumerate(strings)}

    def s(text):
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    body = _field(1, _field(1, 1) + _field(2, 2)) + _field(1, _field(1, 3) + _field(2, 4))
    for i, (key, (count, nbytes)) in enumerate(sorted(_live_arrays().items()), start=1):
        name = s(key)
        body += _field(2, _field(1, _varint(i)) + _field(2, _varint(count) + _varint(nbytes))
                       + _field(3, _field(1, index["kind"]) + _field(2, index["buffer"])))
        body += _field(4, _field(1, i) + _field(4, _field(1, i)))
        body += _field(5, _field(1, i) + _field(2, name) + _field(3, name))
    body += b"".join(_field(6, t.encode()) for t in strings)
    body += _field(9, time.time_ns()) + _field(14, 3)
    return gzip.compress(body)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write :func:`device_memory_profile` to ``filename``."""
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))
