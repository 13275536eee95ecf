"""The table of lowerings given as array functions (``lowering_rules``), below jit.

A primitive that compiles as a function of its operands written with array operations (what
``jax.interpreters.mlir.lower_fun`` makes: an :class:`InlineLowering`) registers it here;
jit's ``expand_lowerings`` (``transforms/jit/lowerings.py``) inlines it before a program
compiles. The table lives outside jit so that primitives can fill it as they fill the other
interpreters' rule tables: they know no backend (``sharding_constraint`` registers its
identity here)::

    >>> from functrans.core.trace import Primitive
    >>> twice_p = Primitive("twice", register=False)
    >>> lowering_rules[twice_p] = {None: InlineLowering(lambda x: x + x, False)}
    >>> lowering_for(twice_p)
    lower_fun('<lambda>')
    >>> del lowering_rules[twice_p]
"""
from __future__ import annotations

from functrans.core.avals import ShapedArray  # noqa: F401  (the examples')
from functrans.core.ir import Jaxpr
from functrans.core.staging import trace_to_jaxpr
from functrans.core.trace import EVAL_TRACE, set_current_trace

# primitive -> {platform (None: every platform): lowering rule}
lowering_rules: dict = {}


class InlineLowering:
    """A lowering given as ``fun(*operands, **params)``, traced and inlined under jit.

    ``multiple_results`` says whether ``fun`` returns a sequence of outputs or one output.

        >>> from functrans.core.trace import Primitive
        >>> p = Primitive("halve", register=False)
        >>> body = InlineLowering(lambda x: x / 2, False).trace(p, [ShapedArray((), "f8")], {})
        >>> [e.prim.name for e in body.eqns]
        ['div']
    """

    def __init__(self, fun, multiple_results=True):
        if not callable(fun):
            raise TypeError(f"lower_fun: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.multiple_results = bool(multiple_results)

    def __call__(self, ctx, *args, **params):
        raise NotImplementedError(
            "functrans has no MLIR: a lowering made by lower_fun is inlined by jit, never "
            "called with a lowering context")

    def __repr__(self):
        return f"lower_fun({getattr(self.fun, '__name__', self.fun)!r})"

    def trace(self, prim, in_avals, params) -> Jaxpr:
        """The program of ``fun`` on operands of types ``in_avals``."""
        def flat(*xs):
            out = self.fun(*xs, **params)
            if not self.multiple_results:
                return [out]
            if not isinstance(out, (list, tuple)):
                raise TypeError(f"the lowering of '{prim.name}' was made with "
                                "multiple_results=True but returned "
                                f"{type(out).__name__}, not a list or tuple of outputs")
            return list(out)
        with set_current_trace(EVAL_TRACE):  # a program of its own, whatever is being traced
            return trace_to_jaxpr(flat, in_avals, name=f"lowering({prim.name})")


def lowering_for(prim, platform="cpu"):
    """The lowering registered for ``prim`` on ``platform`` (or for every platform), or None.

        >>> from functrans.primitives import sin_p
        >>> lowering_for(sin_p) is None   # functrans's own primitives compile natively
        True
    """
    rules = lowering_rules.get(prim)
    if not rules:
        return None
    return rules.get(platform, rules.get(None))
