"""Argument handling shared by the distributions: every argument becomes an inexact array and
all of them share one promoted dtype (JAX's ``promote_args_inexact``), so a float32 ``x``
with Python-scalar parameters stays float32."""
from __future__ import annotations

from ...numpy._core import promote
from ..special import _float


def promote_inexact(*args):
    """The arguments as arrays of one inexact dtype (not broadcast).

    >>> [a.dtype for a in promote_inexact(fnp.ones(2, "float32"), 1.0)]
    [dtype('float32'), dtype('float32')]
    """
    return promote(*(_float(a) for a in args))
