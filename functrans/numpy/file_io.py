"""Saving arrays to files and loading them: ``save`` and ``savez`` are NumPy's (arrays convert
to NumPy zero-copy), ``load`` is NumPy's returning an ``Array`` for ``.npy`` data, with
bfloat16 restored (NumPy writes it as two raw bytes, ``V2``), as ``jax.numpy.load`` does.

    >>> import io
    >>> f = io.BytesIO()
    >>> save(f, fnp.arange(3, dtype="int32"))
    >>> _ = f.seek(0)
    >>> load(f)
    Array([0, 1, 2], dtype=int32)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ._core import asarray
from . import ml_dtypes_names

__all__ = ["load", "save", "savez"]

save = np.save
savez = np.savez


def load(file, *args, **kwargs):
    """``numpy.load``, giving an ``Array`` for ``.npy`` data (bfloat16 data, which NumPy
    stores as raw ``V2`` values, comes back as bfloat16). ``.npz`` archives and arrays of
    dtypes functrans does not compute with (strings, objects) come back as NumPy values.
    Not traceable: it reads a file.

        >>> import io
        >>> f = io.BytesIO()
        >>> np.save(f, np.array([1.5, 2.5], np.float32))
        >>> _ = f.seek(0)
        >>> load(f)
        Array([1.5, 2.5], dtype=float32)
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray):
        return out
    if out.dtype == np.dtype("V2") and "bfloat16" in ml_dtypes_names.types():
        out = out.view(ml_dtypes_names.types()["bfloat16"])
    try:
        return asarray(out)
    except (TypeError, dtypes.UnsupportedDtypeError):  # strings, objects: NumPy's value
        return out
