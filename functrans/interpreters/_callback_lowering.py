"""MLIR lowering rules that only call back into Python (``mlir.emit_python_callback``).

functrans has no MLIR, but a rule whose whole lowering is "run this Python function on the
host" (equinox's ``noinline``) needs none: when jit compiles the primitive, the rule runs
once with a stand-in lowering context, whose ``emit_python_callback`` records the callbacks
and hands back placeholders; the equation then becomes host calls of those callbacks
(``pure_callback``, or ``io_callback`` for ones with side effects) between compiled kernels.
A rule that does anything else (builds MLIR operations, reads other context fields) fails
then, naming the primitive, as before.

    >>> from functrans.extend.core import Primitive
    >>> from functrans.interpreters import mlir
    >>> p = Primitive("host_double")
    >>> _ = p.def_impl(lambda x: x * 2)
    >>> _ = p.def_abstract_eval(lambda a: a)
    >>> def rule(ctx, x):
    ...     out, _, _ = mlir.emit_python_callback(
    ...         ctx, lambda v: [np.asarray(v) * 2], None, [x], ctx.avals_in, ctx.avals_out,
    ...         has_side_effect=False)
    ...     return out
    >>> mlir.register_lowering(p, rule)
    >>> ft.jit(lambda v: p.bind(v) + 1)(fnp.arange(3.0))
    Array([1., 3., 5.], dtype=float64)
"""
from __future__ import annotations

from functrans.core.staging import trace_to_jaxpr
from functrans.core.trace import EVAL_TRACE, set_current_trace
from functrans.primitives.io_callback import IOCallback, io_callback_p
from functrans.primitives.pure_callback import PureCallback, pure_callback_p
from functrans.transforms.jit.lowerings import InlineLowering
from functrans.core.tree import tree_flatten

__all__ = ["CallbackLowering", "emit_python_callback"]


class _Operand:
    """Stands for the primitive's operand ``index`` while the rule runs."""

    def __init__(self, index):
        self.index = index


class _Result:
    """Stands for output ``j`` of the ``k``-th callback the rule emitted."""

    def __init__(self, k, j):
        self.k, self.j = k, j


class _ModuleContext:
    def add_keepalive(self, keepalive) -> None:
        pass  # the callbacks live in the compiled program's equations


class _Context:
    """The lowering context a rule sees: the operand and result types, and the callbacks
    it emits."""

    def __init__(self, avals_in, avals_out):
        self.avals_in, self.avals_out = list(avals_in), list(avals_out)
        self.module_context = _ModuleContext()
        self.emitted: list = []  # (callback, operands, result avals, has_side_effect)


class _HostCallback(IOCallback):
    """An emitted callback with side effects: it gets NumPy values, as MLIR callbacks do."""

    __slots__ = ()

    def _arguments(self, flat):
        return flat


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect, sharding=None, returns_token=False, **_layouts):
    """Record that the lowering calls ``callback`` (NumPy arrays in, a sequence of arrays
    out) on ``operands``; returns (results, token, keepalive) as JAX's does. Only usable
    inside a rule that :class:`CallbackLowering` runs (see the module's example)."""
    if not isinstance(ctx, _Context):
        raise NotImplementedError("emit_python_callback: functrans has no MLIR; it runs "
                                  "lowering rules that only emit Python callbacks itself")
    if token is not None or returns_token:
        raise NotImplementedError("emit_python_callback: ordered callbacks (tokens) are not "
                                  "supported; functrans runs host steps in program order")
    for o in operands:
        if not isinstance(o, (_Operand, _Result)):
            raise NotImplementedError(f"emit_python_callback: operand {o!r:.60} is not an "
                                      "operand of the primitive or a callback's result")
    k = len(ctx.emitted)
    ctx.emitted.append((callback, list(operands), list(result_avals), bool(has_side_effect)))
    return [_Result(k, j) for j in range(len(result_avals))], None, None


class CallbackLowering(InlineLowering):
    """An MLIR lowering rule, run when jit compiles the primitive (see the module)."""

    def __init__(self, rule):
        self.rule = rule
        self.fun, self.multiple_results = rule, True

    def __repr__(self):
        return repr(self.rule)

    def trace(self, prim, in_avals, params):
        with set_current_trace(EVAL_TRACE):
            out_avals = trace_to_jaxpr(lambda *xs: prim.bind_all(*xs, **params),
                                       list(in_avals)).out_avals
        ctx = _Context(in_avals, out_avals)
        try:
            results = self.rule(ctx, *[_Operand(i) for i in range(len(in_avals))], **params)
            results = list(results)
            ok = len(results) == len(out_avals) and all(isinstance(r, _Result)
                                                        for r in results)
        except Exception as e:  # it built MLIR, or needs context functrans does not have
            raise self._unsupported(prim) from e
        if not ok:
            raise self._unsupported(prim)

        def host_calls(*xs):
            values = {}
            for k, (callback, operands, avals, effect) in enumerate(ctx.emitted):
                args = [xs[o.index] if isinstance(o, _Operand) else values[(o.k, o.j)]
                        for o in operands]
                in_tree = tree_flatten((tuple(range(len(args))), {}))[1]
                out_tree = tree_flatten([0] * len(avals))[1]
                fn = _as_list(callback)
                if effect:
                    outs = io_callback_p.bind_all(*args, ordered=False, callback=_HostCallback(
                        fn, in_tree, out_tree, avals, _name(callback)))
                else:
                    outs = pure_callback_p.bind_all(*args, vmap_method=None, callback=PureCallback(
                        fn, in_tree, out_tree, avals, _name(callback)))
                values.update({(k, j): v for j, v in enumerate(outs)})
            return [values[(r.k, r.j)] for r in results]

        with set_current_trace(EVAL_TRACE):
            return trace_to_jaxpr(host_calls, list(in_avals), name=f"lowering({prim.name})")

    def _unsupported(self, prim):
        return NotImplementedError(
            f"jit cannot compile the primitive '{prim.name}': its lowering {self.rule!r} is an "
            "MLIR lowering rule, and functrans has no MLIR (it runs rules that only call "
            "mlir.emit_python_callback). Register mlir.lower_fun(fun, multiple_results=...) "
            "with fun written with jax.numpy/lax operations, or no lowering, so that jit runs "
            "the primitive's impl on the host")


def _as_list(callback):
    def call(*args):
        return list(callback(*args))
    return call


def _name(callback) -> str:
    return getattr(callback, "__name__", type(callback).__name__)
