"""``jax.core`` under :mod:`functrans.as_jax`: the public names of JAX's core module, as
functrans's own types.

    >>> from functrans.as_jax import jax_core
    >>> jax_core.ShapedArray((3,), np.float32).shape
    (3,)
"""
from __future__ import annotations

from typing import Any, Union

from functrans.core.avals import ShapedArray
from functrans.core.eval import eval_jaxpr as _eval_jaxpr
from functrans.core.ir import DropVar, Literal, Var
from functrans.core.trace import Trace, Tracer, pytype_aval_mappings
from functrans.extend.core import get_opaque_trace_state, valid_jaxtype

__all__ = ["AbstractValue", "Atom", "DropVar", "ParamDict", "ShapedArray", "Trace", "Tracer",
           "Value", "eval_jaxpr", "get_opaque_trace_state", "max_dim", "min_dim",
           "pytype_aval_mappings", "valid_jaxtype"]

AbstractValue = ShapedArray  # functrans's only abstract value
Atom = Union[Var, Literal]
Value = Any
ParamDict = dict


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """Run ``jaxpr`` with its constants ``consts`` on ``args`` (JAX's argument order).

        >>> j = ft.make_jaxpr(lambda x: x * 2.0)(1.0)
        >>> eval_jaxpr(j.jaxpr, j.consts, 3.0)
        [Array(6., dtype=float64, weak_type=True)]
    """
    del propagate_source_info  # functrans's equations always keep theirs
    return _eval_jaxpr(jaxpr.replace(consts=list(consts)), *args)


def max_dim(d1, d2):
    """The larger of two dimension sizes (JAX's, for symbolic sizes; sizes are ints here)."""
    return max(d1, d2)


def min_dim(d1, d2):
    """The smaller of two dimension sizes."""
    return min(d1, d2)


def __getattr__(name):
    # The context managers live on functrans's top level (JAX has them on both).
    if name in ("ensure_compile_time_eval", "eval_context"):
        import functrans
        return getattr(functrans, "ensure_compile_time_eval")
    raise AttributeError(f"module 'jax.core' has no attribute {name!r}: functrans does not "
                         f"provide jax.core.{name}")
