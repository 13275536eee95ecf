"""Results of CUDA programs stay on their device: a ``DeviceResidentArray`` holds the
device buffer a kernel wrote, and the next CUDA program on that device takes it as it is
(no copy to the host and back between calls). Its value is copied to the host the first
time something reads it there (``np.asarray``, printing, an eager NumPy operation), once.

    >>> DeviceResidentArray._host_backed
    False
"""
from __future__ import annotations

import math

import numpy as np

from functrans.core.array import Array
from functrans.core.avals import ShapedArray

_HOST = Array.__dict__["_value"]  # the base class's slot: the host copy, once made


class DeviceResidentArray(Array):
    """An Array whose value lives in a CUDA device buffer (flat, of its dtype)."""

    __slots__ = ("_buffer", "_aval", "_device")
    _host_backed = False

    @classmethod
    def wrap(cls, buffer, aval: ShapedArray, device, sharding) -> "DeviceResidentArray":
        a = object.__new__(cls)
        a._buffer, a._aval, a._device = buffer, aval, device
        a._weak, a._sharding = aval.weak_type, sharding
        return a

    @property
    def _value(self) -> np.ndarray:
        try:
            return _HOST.__get__(self, Array)
        except AttributeError:
            n = math.prod(self._aval.shape)
            host = self._buffer.copy_to_host()[:n].reshape(self._aval.shape)
            host.setflags(write=False)
            _HOST.__set__(self, host)
            return host

    def buffer_on(self, device):
        """The device buffer, if it is on ``device`` (else None: the caller copies)."""
        return self._buffer if device == self._device else None

    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: self._aval.size)
    nbytes = property(lambda self: self._aval.size * self._aval.dtype.itemsize)
    itemsize = property(lambda self: self._aval.dtype.itemsize)

    def __reduce__(self):
        return (Array, (np.array(self._value), self._weak))
