"""Eager reverse mode: a tape of per-primitive linearizations, cached by input types.

``vjp`` and ``grad`` called outside every transformation (on concrete values, the usual eager
case) do not stage the whole function's linear program to transpose it afterwards. Each
primitive applied to a differentiated value is linearized on its own instead: its JVP,
partially evaluated into a primal-and-residuals program and a linear one, then transposed.
That is traced once per (primitive, input types, which inputs are differentiated, params) and
cached, when a signature is used a second time. The forward pass runs the cached primal
program's NumPy impls directly and records the residuals on a tape; the backward pass walks
the tape in reverse running the cached transposes. The rules are the general path's (JVP, partial evaluation, transpose rules), so
both give the same derivatives; this one skips re-tracing them on every call::

    >>> out, backward = vjp_on_tape(lambda x: [fnp.sin(x) * x], [np.ones(3)], [True])
    >>> backward([np.ones(3)])[0]          # d(sin(x) x)/dx = cos(x) x + sin(x) at 1
    Array([1.38177329, 1.38177329, 1.38177329], dtype=float64)

A signature's first use, primitives whose params hold programs or functions (control flow,
custom rules, callbacks) and those whose rules need concrete values are linearized per call
with the general machinery and recorded on the same tape.
"""
from __future__ import annotations

import numpy as np

from functrans.core import dtypes
from functrans.core.array import Array
from functrans.core.check import check_jaxpr
from functrans.core.config import config
from functrans.core.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                   UnexpectedTracerError)
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import Jaxpr, Literal
from functrans.core.staging import StagingTrace, hoist_tracer_consts
from functrans.core.trace import (EVAL_TRACE, Trace, Tracer, check_impl_outputs,
                                  concrete_of, context_free_rule, current_trace, get_aval,
                                  impl_via_float32, new_trace, set_current_trace, to_numpy)

from .jvp import Zero, add_tangents, instantiate, jvp_flat, tangent_aval
from .partial_eval import PartialEvalTrace
from .transpose import backward_pass, transpose_jaxpr, transpose_rules


class Program:
    """A jaxpr laid out for a lean NumPy interpreter: registers instead of an environment,
    impls called directly (types are known from the jaxpr, so no type rule runs)."""

    __slots__ = ("regs", "first_in", "steps", "outs")

    def __init__(self, jaxpr):
        slots, regs = {}, []

        def new_slot(value=None):
            regs.append(value)
            return len(regs) - 1

        def ref(x):
            return new_slot(x.val) if type(x) is Literal else slots[x]

        for v, c in zip(jaxpr.constvars, jaxpr.consts):
            slots[v] = new_slot(concrete_of(c))
        self.first_in = len(regs)
        for v in jaxpr.invars:
            slots[v] = new_slot()
        self.steps = []
        for eqn in jaxpr.eqns:
            ins = [ref(x) for x in eqn.inputs]
            outs = []
            for v in eqn.outputs:
                slots[v] = new_slot()
                outs.append(slots[v])
            narrow = any(dtypes.is_narrow_float(x.aval.dtype) for x in eqn.inputs)
            self.steps.append((eqn.prim, ins, eqn.params, outs, [v.aval for v in eqn.outputs],
                               narrow))
        self.outs = [ref(x) for x in jaxpr.outvars]
        self.regs = regs

    def run(self, args) -> list:
        """Outputs (ndarrays) of the program on ``args`` (ndarrays of the input types)."""
        regs = self.regs.copy()
        regs[self.first_in:self.first_in + len(args)] = args
        check = config.check_jaxprs
        for prim, ins, params, outs, avals, narrow in self.steps:
            if narrow:  # bfloat16/float8: computed in float32 (see impl_via_float32)
                res = impl_via_float32(prim, [regs[i] for i in ins], params, avals)
            else:
                res = prim.impl(*[regs[i] for i in ins], **params)
            if check:
                check_impl_outputs(prim, res, avals)
            for s, o, a in zip(outs, res, avals):
                if type(o) is not np.ndarray or o.dtype != a.dtype:
                    o = np.asarray(o, dtype=a.dtype)
                regs[s] = o
        return [regs[i] for i in self.outs]


class Linearized:
    """One primitive's cached linearization at one signature.

    ``forward`` maps the primal inputs to the primal outputs followed by the residuals; the
    linear program maps the residuals and the differentiated inputs' tangents to the
    differentiated outputs' tangents. Both come from one trace: the JVP rule runs on a partial
    evaluation whose known values are tracers of a staging trace (the primal program), as
    ``linearize`` runs it on concrete values. The transpose is traced at its first use, so a
    forward pass never fails for want of a transpose rule: only the backward pass does, as on
    the general path.
    """

    __slots__ = ("forward", "out_avals", "out_tracked", "linear", "num_res", "_transposed",
                 "_program")

    def __init__(self, prim, in_avals, tracked, params):
        primal = StagingTrace(current_trace(), "vjp")
        with new_trace(primal):
            primals = [primal.new_arg(a) for a in in_avals]
            p_out, self.out_tracked, self.linear, residuals = _linearize_on(
                primal, prim, primals, tracked, params)
            known = primal.to_jaxpr(list(p_out) + residuals)
        if config.check_jaxprs:
            check_jaxpr(known)
            check_jaxpr(self.linear)
        self.out_avals = [get_aval(p) for p in p_out]
        self.num_res = len(residuals)
        self.forward = Program(known)
        self._transposed = self._program = None

    def transposable(self) -> bool:
        return all(e.prim in transpose_rules for e in self.linear.eqns)

    def transpose(self, residuals, cts, lean):
        """Cotangents of the differentiated inputs (ndarrays when ``lean``, else values of the
        current trace)."""
        if self._transposed is None:
            self._transposed = transpose_jaxpr(
                self.linear, [False] * self.num_res + [True] * (len(self.linear.invars)
                                                                - self.num_res))
        if not lean:
            return eval_jaxpr(self._transposed, *residuals, *cts)
        if self._program is None:
            self._program = Program(self._transposed)
        return self._program.run(list(residuals) + cts)


def _linearize_on(primal, prim, primals, tracked, params):
    """JVP of ``prim`` over partial evaluation whose known values are those of the trace
    ``primal`` (a staging trace's tracers, or concrete values on the eval trace):
    ``(primals_out, which tangents out depend on the tangents in, linear jaxpr, residuals)``.
    The linear jaxpr takes the residuals (tracers of ``primal``) and then the tangents."""
    pe = PartialEvalTrace(primal, "vjp")
    with new_trace(pe):
        tangents = [pe.new_arg(tangent_aval(get_aval(p))) if t else
                    Zero(tangent_aval(get_aval(p))) for p, t in zip(primals, tracked)]
        p_out, t_out = jvp_flat(lambda *xs: prim.bind_all(*xs, **params), primals, tangents)
        if any(pe.is_unknown(p) for p in p_out):
            raise AssertionError(f"linearizing {prim}: a primal output depends on tangents")
        out_tracked = [pe.is_unknown(t) for t in t_out]
        linear = pe.to_jaxpr([t for t, u in zip(t_out, out_tracked) if u])
    # The primal program's values the linear one uses become its leading inputs.
    linear, residuals = hoist_tracer_consts(linear)
    return p_out, out_tracked, linear, residuals


class LinearizedNow:
    """A primitive linearized per call, on concrete primals, by the general machinery (JVP
    over partial evaluation): a signature's first use, and what ``_build`` cannot cache."""

    __slots__ = ("jaxpr",)

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr

    def transpose(self, residuals, cts, lean):
        n = len(self.jaxpr.invars)
        if lean:
            cts = [c if type(c) is Zero else Array._wrap(c) for c in cts]
        out = backward_pass(self.jaxpr, [True] * n, [None] * n, cts)
        if lean:
            return [c if type(c) is Zero else concrete_of(c) for c in out]
        return out


_UNCACHEABLE = object()
_SEEN_ONCE = object()
_CACHE_SIZE = 4096
_cache: dict = {}


def _linearized(prim, avals, tracked, params):
    """The cached linearization for this signature, or None where it is done per call.

    A signature's first use is linearized per call: building the cached programs costs about
    three times that, which only pays off when the signature comes back (an eager loop whose
    shapes change at every call would otherwise pay it at every primitive)."""
    try:
        key = (prim, config.enable_x64, tracked, *avals, *params.items())
        lin = _cache.get(key)
    except TypeError:  # unhashable params
        return None
    if lin is None:
        lin = _SEEN_ONCE
    elif lin is _SEEN_ONCE:
        lin = _build(prim, avals, tracked, params)
    else:
        return None if lin is _UNCACHEABLE else lin
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    _cache[key] = lin
    return None if lin is _UNCACHEABLE or lin is _SEEN_ONCE else lin


def _build(prim, avals, tracked, params):
    """A Linearized, or _UNCACHEABLE where it would hold programs or functions, its rules
    need primal values, or its linear program has no transpose rule (the per-call path then
    names the user's line, at backward time)."""
    if not context_free_rule(prim, params):
        return _UNCACHEABLE
    try:
        with set_current_trace(EVAL_TRACE):
            built = Linearized(prim, avals, list(tracked), params)
    except (ConcretizationTypeError, TracerArrayConversionError):
        return _UNCACHEABLE  # the rules look at primal values
    return built if built.transposable() else _UNCACHEABLE


class TapeTracer(Tracer):
    """A concrete value that depends on the differentiated inputs: ``node`` names it on the
    tape."""

    __slots__ = ("value", "aval", "node")

    def __init__(self, trace, value, aval, node):
        self._trace = trace
        self.value = value
        self.aval = aval
        self.node = node

    def concrete_value(self):
        return self.value


class TapeTrace(Trace):
    """Runs primitives now and records, for those on differentiated values, how to transpose
    them: ``entries`` holds ``(linearization, residuals, input nodes, output nodes)``."""

    name = "vjp"

    def __init__(self, parent):
        super().__init__(parent)
        self.entries: list = []
        self.node_avals: list = []  # per node, its primal's type

    def new_node(self, value, aval) -> TapeTracer:
        self.node_avals.append(aval)
        return TapeTracer(self, value, aval, len(self.node_avals) - 1)

    def primal_of(self, x):
        """``x`` without its tape (for auxiliary outputs, which are not differentiated)."""
        if type(x) is TapeTracer and x._trace is self:
            return Array._wrap(x.value, x.aval.weak_type)
        return x

    def process_primitive(self, prim, args, params):
        for x in args:
            if type(x) is TapeTracer and x._trace is self:
                break
        else:  # nothing differentiated: runs on the parent as it is
            return self.on_parent(prim, args, params)
        vals, avals, tracked, user = [], [], [], None
        for x in args:
            if type(x) is TapeTracer and x._trace is self:
                vals.append(x.value)
                avals.append(x.aval)
                tracked.append(True)
                continue
            if isinstance(x, Tracer):
                raise UnexpectedTracerError(x)  # only tracers of finished traces get here
            a = get_aval(x)
            vals.append(to_numpy(x, a))
            avals.append(a)
            tracked.append(False)
            if type(x) is np.ndarray and x.flags.writeable:
                user = (user or []) + [x]
        tracked = tuple(tracked)
        lin = _linearized(prim, avals, tracked, params)
        if lin is None:
            return self._linearize_now(prim, args, tracked, params)
        outs = lin.forward.run(vals)
        n_out = len(lin.out_avals)
        result, out_nodes = [], []
        for o, a, t in zip(outs, lin.out_avals, lin.out_tracked):
            if user and any(np.may_share_memory(o, u) for u in user):
                o = o.copy()  # a view of the caller's writable array would not stay immutable
            o.setflags(write=False)
            if t:
                r = self.new_node(o, a)
                out_nodes.append(r.node)
            else:
                r = Array._wrap(o, a.weak_type)
            result.append(r)
        in_nodes = [x.node for x, t in zip(args, tracked) if t]
        self.entries.append((lin, outs[n_out:], in_nodes, out_nodes))
        return result

    def _linearize_now(self, prim, args, tracked, params):
        primals = [Array._wrap(x.value, x.aval.weak_type) if t else x
                   for x, t in zip(args, tracked)]
        p_out, out_tracked, jaxpr, _ = _linearize_on(self.parent, prim, primals, tracked, params)
        result, out_nodes = [], []
        for p, t in zip(p_out, out_tracked):
            if t:
                r = self.new_node(concrete_of(p), get_aval(p))
                out_nodes.append(r.node)
                p = r
            result.append(p)
        in_nodes = [x.node for x, t in zip(args, tracked) if t]
        self.entries.append((LinearizedNow(jaxpr), (), in_nodes, out_nodes))
        return result


def vjp_on_tape(fun, primals, mask):
    """Run flat ``fun`` (list -> list) differentiating the inputs where ``mask`` is set.

    Returns ``(primals_out, backward)``; ``backward(cts_out)`` maps one cotangent per output
    (``Zero`` allowed) to one per differentiated input (``Zero`` where none arrived).
    """
    tape = TapeTrace(current_trace())
    with new_trace(tape):
        ins = [tape.new_node(to_numpy(p), get_aval(p)) if m else p
               for p, m in zip(primals, mask)]
        outs = fun(*ins)
        primals_out = []
        for o in outs:
            if isinstance(o, Tracer) and not (type(o) is TapeTracer and o._trace is tape):
                tape.check_foreign(o)
            primals_out.append(tape.primal_of(o))
    out_nodes = [o.node if type(o) is TapeTracer and o._trace is tape else None for o in outs]
    in_avals = [tangent_aval(get_aval(p)) for p, m in zip(primals, mask) if m]

    def backward(cts_out, residuals=None):
        """``residuals``, when given, stand for the tape's (in ``residual_values()``'s
        order): the values a VJP rebuilt from its leaves holds."""
        lean = current_trace() is EVAL_TRACE and not any(
            isinstance(c, Tracer) for c in (cts_out if residuals is None
                                            else list(cts_out) + list(residuals)))
        entries = tape.entries if residuals is None else _substituted(tape.entries,
                                                                      residuals, lean)
        cts = {}
        for n, c in zip(out_nodes, cts_out):
            if n is None or type(c) is Zero:
                continue
            if lean:  # (a copy of a caller's writable array: gradients may be views of it)
                v, dtype = concrete_of(c), tape.node_avals[n].dtype
                c = np.array(v, dtype) if type(c) is np.ndarray and v.flags.writeable \
                    else np.asarray(v, dtype)
            cts[n] = c if n not in cts else _add(cts[n], c, lean)
        for lin, res, in_nodes, nodes in reversed(entries):
            outs_ct = [cts.pop(n, None) for n in nodes]
            if all(c is None for c in outs_ct):
                continue
            # Outputs without a cotangent: zeros for the cached programs; symbolic zeros for
            # the general path's transpose rules (custom rules see them as JAX passes them).
            symbolic = type(lin) is LinearizedNow
            outs_ct = [(Zero(tangent_aval(tape.node_avals[n])) if symbolic else
                        _zeros(tape.node_avals[n], lean)) if c is None else c
                       for n, c in zip(nodes, outs_ct)]
            for n, c in zip(in_nodes, lin.transpose(res, outs_ct, lean)):
                if type(c) is Zero:
                    continue
                cts[n] = c if n not in cts else _add(cts[n], c, lean)
        return [Zero(a) if n not in cts else Array._wrap(cts[n]) if lean else cts[n]
                for n, a in enumerate(in_avals)]

    def inputs_read() -> list[int]:
        """The differentiated inputs (by position among them) whose values the backward
        pass reads as residuals (the very buffers passed, as ``VJP.args_res`` shows)."""
        values = {id(x.value): i for i, x in enumerate(x for x in ins if type(x) is TapeTracer)}
        read = set()
        for lin, residuals, _, _ in tape.entries:
            if type(lin) is LinearizedNow:  # its residuals: its jaxpr's consts and literals
                residuals = [r._value for r in lin.jaxpr.consts if type(r) is Array] + [
                    x.val for e in lin.jaxpr.eqns for x in e.inputs if type(x) is Literal]
            read.update(values[id(r)] for r in residuals if id(r) in values)
        return sorted(read)

    def residual_values() -> list:
        """The residuals the backward pass reads, as arrays, in a fixed order: each cached
        linearization's, each linearization-now's constants."""
        return [r for lin, res, _, _ in tape.entries
                for r in (lin.jaxpr.consts if type(lin) is LinearizedNow
                          else [Array._wrap(v) for v in res])]

    def residual_sources() -> list:
        """For each of ``residual_values()``: the differentiated input (by position among
        them) it is the very buffer of, or None."""
        values = {id(x.value): i for i, x in enumerate(x for x in ins if type(x) is TapeTracer)}
        return [values.get(id(r._value if type(r) is Array else r))
                for lin, res, _, _ in tape.entries
                for r in (lin.jaxpr.consts if type(lin) is LinearizedNow else res)]

    backward.inputs_read = inputs_read
    backward.residual_values = residual_values
    backward.residual_sources = residual_sources
    return primals_out, backward


def _substituted(entries, values, lean):
    """The tape's entries reading ``values`` (in ``residual_values()``'s order) as their
    residuals: NumPy buffers when ``lean``, else the values themselves."""
    it, out = iter(values), []
    for lin, res, in_nodes, nodes in entries:
        if type(lin) is LinearizedNow:
            j = lin.jaxpr
            consts = [next(it) for _ in j.consts]
            lin = LinearizedNow(Jaxpr(j.constvars, consts, j.invars, j.outvars, j.eqns))
            out.append((lin, res, in_nodes, nodes))
        else:
            new = [next(it) for _ in res]
            if lean:
                new = [np.asarray(concrete_of(v), r.dtype) for v, r in zip(new, res)]
            out.append((lin, new, in_nodes, nodes))
    return out


def _add(a, b, lean):
    if not lean:
        return add_tangents(a, b)
    out = np.add(a, b)
    return out if type(out) is np.ndarray else np.asarray(out)  # 0-d: a NumPy scalar


def _zeros(aval, lean):
    """The cotangent of an output that received none (of a primitive with several)."""
    aval = tangent_aval(aval)
    return np.zeros(aval.shape, aval.dtype) if lean else instantiate(Zero(aval))
