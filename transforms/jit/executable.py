"""Executables for jaxprs: what ``jit`` runs under evaluation.

For now a jaxpr is run by the reference interpreter (each primitive's NumPy impl); the Numba
lowering replaces this with compiled kernels.
"""
from __future__ import annotations

from functrans.core.eval import eval_jaxpr
from functrans.core.memo import cache_on_jaxpr


@cache_on_jaxpr
def executable_for(jaxpr, name):
    """A callable running ``jaxpr`` on concrete arguments."""
    def run(*args):
        return eval_jaxpr(jaxpr, *args)
    return run
