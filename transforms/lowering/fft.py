"""The ``fft`` primitive in generated kernels: Numba has no FFT, so the kernel calls NumPy's
``pocketfft`` (the primitive's impl) in an object-mode block and carries on compiled::

    >>> run(np.ones(4, np.complex128), "FFT", (4,))
    array([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j])
"""
from __future__ import annotations

import numpy as np

from .ops import op_rules
from .scalar import dtype_ctor


def run(x, fft_type, fft_lengths):
    """The primitive's NumPy impl, C-contiguous (what the kernel's declared type promises)."""
    from functrans.primitives.fft import fft_p
    return np.ascontiguousarray(fft_p.impl(x, fft_type=fft_type, fft_lengths=fft_lengths)[0])


def _fft(em, eqn):
    x, out = eqn.inputs[0], eqn.outputs[0]
    src, dst = em.atom(x), em.name(out)
    dims = ", ".join([":"] * (out.aval.ndim - 1) + ["::1"])
    kind = dtype_ctor(out.aval.dtype).removeprefix("np.")
    em.line(f"with nb.objmode({dst}='{kind}[{dims}]'):")
    em.line(f"    {dst} = fftl.run({src}, {eqn.params['fft_type']!r}, "
            f"{tuple(eqn.params['fft_lengths'])!r})")


op_rules["fft"] = _fft
