"""Running an optimized jaxpr on a CUDA device: buffers stay on the device between kernels.

Every value is a flat, C-ordered device array (rank-0 values hold one element), so fused
elementwise kernels and index-map ``take``s work on flat indices and reshapes are free.
The host drives: it launches one kernel per step, runs control flow (cond reads its index,
while its predicate, scan slices its inputs on the device), and transfers only arguments,
results, and the few runtime indices that gather/scatter/dynamic_slice need. Primitives
without a CUDA kernel (listed in ``HOST_PRIMITIVES``) run their NumPy impl on the host, with
their operands copied over and back. Users' ``numba.cuda.jit`` kernels (``numba_call`` with
``launch=``) are launched on the buffers the program holds (``user_kernels.py``); users' CPU
kernels run on the host like the primitives without a kernel.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from functrans.core.array import Array
from functrans.core.ir import Literal
from functrans.core.trace import EVAL_TRACE, set_current_trace

from ..lowering import lapack
from ..lowering.scalar import scalar_rules
from . import kernels as K

# Elementwise primitives whose scalar rule needs a CPU-only helper (special functions).
_NOT_ON_DEVICE = {"erf_inv", "digamma", "polygamma", "zeta", "nextafter", "population_count",
                  # a user's scalar kernel is compiled for the CPU (numba.njit): it runs on
                  # the host; a device version (cuda.jit(device=True)) is future work
                  "numba_vectorize"}
# Without a CUDA kernel yet: run on the host (operands copied over and back); the tests
# check that this list is exactly what has no kernel.
# (Primitives marked host_only -- collectives, callbacks, shard_map and the decompositions
# qr/eigh/svd -- have no handler either and run on the host the same way; they are not listed
# here. cholesky, triangular_solve and lu are host_only only without an in-kernel LAPACK.)
HOST_PRIMITIVES = _NOT_ON_DEVICE | {
    "scatter-mul", "fft", "conv_general_dilated", "reduce_window_sum", "reduce_window_max",
    "reduce_window_min", "select_and_gather_add", "select_and_scatter_add"} | (
    {"cholesky", "triangular_solve", "lu"} if lapack.AVAILABLE else set())
_INDEX_MAPS = {"broadcast_in_dim", "transpose", "slice", "rev", "pad", "concatenate"}
_ALIASES = {"reshape", "squeeze"}
_REDUCE = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max",
           "reduce_min": "min", "reduce_and": "and", "reduce_or": "or"}
_SCATTER = {"scatter": "set", "scatter-add": "add", "scatter-min": "min", "scatter-max": "max"}


def is_fused(eqn) -> bool:
    return ("elementwise" in eqn.prim.traits and eqn.prim.name in scalar_rules
            and eqn.prim.name not in _NOT_ON_DEVICE)


def _flat_size(aval) -> int:
    return max(1, int(np.prod(aval.shape, dtype=np.int64)))


def to_device(x, aval):
    host = np.ascontiguousarray(np.asarray(x, dtype=aval.dtype)).reshape(-1)
    return cuda.to_device(host if host.size else np.zeros(1, aval.dtype))


def to_host(d, aval) -> np.ndarray:
    n = int(np.prod(aval.shape, dtype=np.int64))
    return d.copy_to_host()[:n].reshape(aval.shape)


def _arange(aval) -> np.ndarray:
    return np.arange(int(np.prod(aval.shape, dtype=np.int64)), dtype=np.int64).reshape(aval.shape)


class _Plan:
    """The steps of a jaxpr: fused runs of elementwise equations, and single equations."""

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr
        self.steps = []
        run: list = []
        for eqn in jaxpr.eqns:
            if is_fused(eqn) and (not run or run[0].outputs[0].aval.shape ==
                                  eqn.outputs[0].aval.shape):
                run.append(eqn)
                continue
            self._flush(run)
            run = [eqn] if is_fused(eqn) else []
            if not run:
                self.steps.append(eqn)
        self._flush(run)
        self._index_maps: dict = {}
        self._consts = None

    def _flush(self, run):
        if run:
            self.steps.append(_Fused(run))

    def consts(self):
        if self._consts is None:  # uploaded once per program
            self._consts = [to_device(c, v.aval)
                            for v, c in zip(self.jaxpr.constvars, self.jaxpr.consts)]
        return self._consts

    def index_map(self, eqn, make, tag=""):
        """The index map of ``eqn`` (``tag`` tells several apart), uploaded once."""
        key = (id(eqn), tag)
        idx = self._index_maps.get(key)
        if idx is None:
            idx = self._index_maps[key] = cuda.to_device(
                np.ascontiguousarray(make()).reshape(-1))
        return idx


class _Fused:
    def __init__(self, eqns):
        defined = {o for e in eqns for o in e.outputs}
        self.eqns = eqns
        self.inputs = []
        for e in eqns:
            for x in e.inputs:
                if not isinstance(x, Literal) and x not in defined and x not in self.inputs:
                    self.inputs.append(x)
        self.outputs = [o for e in eqns for o in e.outputs]
        self.kernel = None


def run_jaxpr(plan: _Plan, args: list) -> list:
    """Run ``plan`` on device arrays ``args``; returns device arrays."""
    env = dict(zip(plan.jaxpr.constvars, plan.consts()))
    env.update(zip(plan.jaxpr.invars, args))

    def read(x):
        if isinstance(x, Literal):
            return to_device(x.val, x.aval)
        return env[x]

    for step in plan.steps:
        if isinstance(step, _Fused):
            _run_fused(step, env, read)
        else:
            outs = _run_eqn(plan, step, [read(x) for x in step.inputs])
            env.update(zip(step.outputs, outs))
    return [read(x) for x in plan.jaxpr.outvars]


def _run_fused(step, env, read):
    if step.kernel is None:
        step.kernel = K.fused(step.eqns, step.inputs, step.outputs)
    n = int(np.prod(step.outputs[0].aval.shape, dtype=np.int64))
    outs = [cuda.device_array(_flat_size(o.aval), o.aval.dtype) for o in step.outputs]
    if n:
        blocks, threads = K.launch_shape(n)
        step.kernel[blocks, threads](n, *outs, *[read(x) for x in step.inputs])
    env.update(zip(step.outputs, outs))


def _take(src, idx, out_aval, fill=None):
    out = cuda.device_array(_flat_size(out_aval), out_aval.dtype)
    if fill is None:
        fill = cuda.to_device(np.zeros(1, out_aval.dtype))
    n = int(np.prod(out_aval.shape, dtype=np.int64))
    if n:
        blocks, threads = K.launch_shape(n)
        K.take()[blocks, threads](out[:n], src, idx, fill)
    return out


def _host_indices(vals, avals):
    return [to_host(v, a) for v, a in zip(vals, avals)]


def _run_eqn(plan, eqn, vals):
    handler = _HANDLERS.get(eqn.prim.name)
    if handler is None and "cumulative" in eqn.prim.traits:
        handler = _cumulative
    if handler is None:
        return _on_host(eqn, vals)
    return handler(plan, eqn, vals, [x.aval for x in eqn.inputs],
                   eqn.outputs[0].aval if eqn.outputs else None, eqn.params)


def runs_on_device(prim) -> bool:
    """Whether the cuda backend has a kernel for ``prim`` (else it runs on the host)."""
    return ("elementwise" in prim.traits and prim.name in scalar_rules
            and prim.name not in _NOT_ON_DEVICE) or prim.name in _HANDLERS \
        or "cumulative" in prim.traits


def _on_host(eqn, vals):
    host = [to_host(v, x.aval) for v, x in zip(vals, eqn.inputs)]
    with set_current_trace(EVAL_TRACE):  # collectives and callbacks need their bind
        outs = eqn.prim.bind_all(*host, **eqn.params)
    return [to_device(np.asarray(o), v.aval) for o, v in zip(outs, eqn.outputs)]


def _alias(plan, eqn, vals, in_avals, out_aval, params):
    return [vals[0]]  # flat buffers: reshapes are free


def _iota(plan, eqn, vals, in_avals, out_aval, params):
    return [plan.index_map(eqn, lambda: eqn.prim.impl(**params)[0])]


def _index_map_op(plan, eqn, vals, in_avals, out_aval, params):
    return [_index_map_take(plan, eqn, vals, in_avals, out_aval)]


def _index_map_take(plan, eqn, vals, in_avals, out_aval):
    name, params = eqn.prim.name, eqn.params
    if name == "concatenate":
        offsets = np.cumsum([0] + [int(np.prod(a.shape)) for a in in_avals])
        total = cuda.device_array(max(1, int(offsets[-1])), out_aval.dtype)
        for v, a, off in zip(vals, in_avals, offsets):
            n = int(np.prod(a.shape))
            if n:
                total[off:off + n].copy_to_device(v[:n])
        idx = plan.index_map(eqn, lambda: eqn.prim.impl(
            *[_arange(a) + off for a, off in zip(in_avals, offsets)], **params)[0])
        return _take(total, idx, out_aval)
    if name == "pad":
        idx = plan.index_map(eqn, lambda: eqn.prim.impl(_arange(in_avals[0]), np.int64(-1),
                                                        **params)[0])
        return _take(vals[0], idx, out_aval, fill=vals[1])
    idx = plan.index_map(eqn, lambda: eqn.prim.impl(_arange(in_avals[0]), **params)[0])
    return _take(vals[0], idx, out_aval)


def _rows_last(aval, axes):
    """Index map putting ``axes`` last: (kept elements, reduced elements) rows."""
    kept = [d for d in range(len(aval.shape)) if d not in axes]
    moved = np.transpose(_arange(aval), kept + list(axes))
    m = int(np.prod([aval.shape[d] for d in axes], dtype=np.int64))
    return moved.reshape(-1, m) if m else moved.reshape(-1, 0), m


def _identity(op, dtype):
    dtype = np.dtype(dtype)
    if op in ("sum", "or"):
        return 0
    if op == "prod":
        return 1
    if op == "and":
        return True if dtype.kind == "b" else -1
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    if dtype.kind == "b":
        return op == "min"
    info = np.iinfo(dtype)
    return info.min if op == "max" else info.max


def _reduce(plan, eqn, vals, in_avals, out_aval, params):
    x, aval, op = vals[0], in_avals[0], _REDUCE[eqn.prim.name]
    rows_idx, m = _rows_last(aval, tuple(params["axes"]))
    n_out = int(np.prod(out_aval.shape, dtype=np.int64))
    out = cuda.device_array(_flat_size(out_aval), out_aval.dtype)
    if n_out == 0:
        return [out]
    if m == 0:
        out[:n_out].copy_to_device(np.full(n_out, _identity(op, aval.dtype), aval.dtype))
        return [out]
    idx = plan.index_map(eqn, lambda: rows_idx)
    rows = _take(x, idx, aval.update(shape=(n_out * m,))).reshape(n_out, m)
    identity = _identity(op, aval.dtype)
    if aval.dtype.kind != "f" and op in ("max", "min"):
        op = "i" + op  # integers and bools have no NaN to propagate
    kernel = K.reduce(op, aval.dtype, identity)
    threads = 8 if K.simulated() else K.BLOCK
    kernel[n_out, threads](out, rows)
    return [out]


def _arg_reduce(plan, eqn, vals, in_avals, out_aval, params):
    x, aval, name = vals[0], in_avals[0], eqn.prim.name
    rows_idx, m = _rows_last(aval, tuple(params["axes"]))
    n_out = max(1, rows_idx.shape[0])
    idx = plan.index_map(eqn, lambda: rows_idx)
    rows = _take(x, idx, aval.update(shape=(rows_idx.size,))).reshape(rows_idx.shape[0], m)
    out = cuda.device_array(n_out, out_aval.dtype)
    blocks, threads = K.launch_shape(rows_idx.shape[0])
    K.arg_reduce(name == "argmax")[blocks, threads](out, rows)
    return [out]


def _cumulative(plan, eqn, vals, in_avals, out_aval, params):
    x, aval, name = vals[0], in_avals[0], eqn.prim.name
    axis, reverse = params["axis"], params["reverse"]
    if aval.size == 0:
        return [x]
    order = np.moveaxis(_arange(aval), axis, -1)
    if reverse:
        order = np.flip(order, -1)
    m = aval.shape[axis]
    fwd = plan.index_map(eqn, lambda: order)
    back = plan.index_map(eqn, lambda: np.argsort(order.reshape(-1)), "back")
    rows = _take(x, fwd, aval).reshape(-1, m)
    out = cuda.device_array((rows.shape[0], m), aval.dtype)
    blocks, threads = K.launch_shape(rows.shape[0])
    K.scan_rows(name, aval.dtype, aval.dtype.kind != "f")[blocks, threads](out, rows)
    return [_take(out.reshape(-1), back, aval)]


def _dot_on_device(in_avals, out_aval) -> bool:
    return (all(a.dtype == out_aval.dtype for a in in_avals) and out_aval.dtype.kind in "iuf"
            and out_aval.dtype.itemsize >= 4)


def _dot(plan, eqn, vals, in_avals, out_aval, params):
    if not _dot_on_device(in_avals, out_aval):  # mixed or narrow dtypes
        return _on_host(eqn, vals)
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    la, ra = in_avals
    lfree = [d for d in range(la.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    size = lambda a, ds: int(np.prod([a.shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    p, m, k, n = size(la, lb), size(la, lfree), size(la, lc), size(ra, rfree)
    out = cuda.device_array(_flat_size(out_aval), out_aval.dtype)
    if p * m * n == 0:
        return [out]
    if k == 0:
        out.copy_to_device(np.zeros(out.size, out_aval.dtype))
        return [out]
    li = plan.index_map(eqn, lambda: np.transpose(_arange(la), list(lb) + lfree + list(lc)))
    ri = plan.index_map(eqn, lambda: np.transpose(_arange(ra), list(rb) + list(rc) + rfree),
                        "rhs")
    a = _take(vals[0], li, la).reshape(p, m, k)
    b = _take(vals[1], ri, ra).reshape(p, k, n)
    c = out.reshape(p, m, n)
    grid = ((n + K.TILE - 1) // K.TILE, (m + K.TILE - 1) // K.TILE, p)
    K.matmul(out_aval.dtype)[grid, (K.TILE, K.TILE)](c, a, b)
    return [out]


def _sort(plan, eqn, vals, in_avals, out_aval, params):
    aval, dim = in_avals[0], params["dimension"]
    if aval.ndim == 0 or aval.size == 0:
        return list(vals)
    order = np.moveaxis(_arange(aval), dim, -1)
    fwd = plan.index_map(eqn, lambda: order)
    back = plan.index_map(eqn, lambda: np.argsort(order.reshape(-1)), "back")
    m = aval.shape[dim]
    rows = [_take(v, fwd, a).reshape(-1, m) for v, a in zip(vals, in_avals)]
    blocks, threads = K.launch_shape(rows[0].shape[0])
    K.sort_rows(len(rows), params["num_keys"])[blocks, threads](*rows)
    return [_take(r.reshape(-1), back, a) for r, a in zip(rows, in_avals)]


def _bitcast(plan, eqn, vals, in_avals, out_aval, params):
    return [vals[0].view(out_aval.dtype)]  # a flat buffer reinterpreted: no copy


def _gather(plan, eqn, vals, in_avals, out_aval, params):
    """Positions read, from the primitive's impl on an index array (indices come to the
    host: they decide the map)."""
    idx_host = _host_indices(vals[1:], in_avals[1:])
    operand = _arange(in_avals[0])
    if eqn.prim.name == "dynamic_slice":
        pos = eqn.prim.impl(operand, *idx_host, **params)[0]
        fill = None
    else:
        from functrans.primitives.indexing import _default_fill
        pos = eqn.prim.impl(operand, *idx_host, axes=params["axes"], mode=params["mode"],
                            fill_value=-1)[0]
        value = params["fill_value"]
        fill = cuda.to_device(np.full(1, _default_fill(out_aval.dtype) if value is None
                                      else value, out_aval.dtype))
    return [_take(vals[0], cuda.to_device(np.ascontiguousarray(pos).reshape(-1)), out_aval,
                  fill)]


def _scatter(plan, eqn, vals, in_avals, out_aval, params):
    operand_aval, update_aval = in_avals[0], in_avals[1]
    idx_host = _host_indices(vals[2:], in_avals[2:])
    arange = _arange(operand_aval)
    if eqn.prim.name == "dynamic_update_slice":
        pos = _dus_positions(arange, idx_host, update_aval.shape)
        kind = "set"
    else:
        k = len(params["axes"])
        batch = update_aval.shape[:update_aval.ndim - (operand_aval.ndim - k)]
        idx = [np.broadcast_to(i, batch) for i in idx_host]
        from functrans.primitives.indexing import gather_p
        pos = gather_p.impl(arange, *idx, axes=params["axes"],
                            mode="fill" if params["mode"] == "drop" else "clip",
                            fill_value=-1)[0]
        kind = _SCATTER[eqn.prim.name]
    out = cuda.device_array(_flat_size(out_aval), out_aval.dtype)
    out.copy_to_device(vals[0])
    n = int(pos.size)
    if n:
        blocks, threads = K.launch_shape(n)
        K.scatter(kind)[blocks, threads](out, vals[1], cuda.to_device(
            np.ascontiguousarray(pos).reshape(-1)))
    return [out]


def _dus_positions(arange, starts, shape):
    """Where dynamic_update_slice writes: clamped starts, as the impl does."""
    starts = [int(np.clip(int(s), 0, d - n)) for s, d, n in zip(starts, arange.shape, shape)]
    return arange[tuple(slice(s, s + n) for s, n in zip(starts, shape))]


def _control(plan, eqn, vals, in_avals, out_aval, params):
    name = eqn.prim.name
    if name == "cond":
        i = int(np.clip(to_host(vals[0], in_avals[0]), 0, len(params["branches"]) - 1))
        return run_jaxpr(_plan_of(params["branches"][i]), vals[1:])
    if name == "while":
        nc, nb = params["cond_nconsts"], params["body_nconsts"]
        cconsts, bconsts, carry = vals[:nc], vals[nc:nc + nb], list(vals[nc + nb:])
        cond, body = _plan_of(params["cond_jaxpr"]), _plan_of(params["body_jaxpr"])
        pred_aval = params["cond_jaxpr"].out_avals[0]
        while bool(to_host(run_jaxpr(cond, cconsts + carry)[0], pred_aval)):
            carry = run_jaxpr(body, bconsts + carry)
        return carry
    jaxpr, length = params["jaxpr"], params["length"]
    nconst, ncarry = params["num_consts"], params["num_carry"]
    consts, carry, xs = vals[:nconst], list(vals[nconst:nconst + ncarry]), vals[nconst + ncarry:]
    x_avals = jaxpr.in_avals[nconst + ncarry:]
    y_avals = jaxpr.out_avals[ncarry:]
    ys = [cuda.device_array(max(1, length * _flat_size(a)), a.dtype) for a in y_avals]
    body = _plan_of(jaxpr)
    for step in range(length):
        i = length - 1 - step if params["reverse"] else step
        xi = [x[i * _flat_size(a):(i + 1) * _flat_size(a)] for x, a in zip(xs, x_avals)]
        outs = run_jaxpr(body, consts + carry + xi)
        carry = outs[:ncarry]
        for y, a, o in zip(ys, y_avals, outs[ncarry:]):
            w = _flat_size(a)
            y[i * w:(i + 1) * w].copy_to_device(o[:w])
    return carry + ys


def _numba_call(plan, eqn, vals, in_avals, out_aval, params):
    """A user's kernel: a CUDA kernel launches on the buffers the program holds (its results
    stay on the device); a CPU kernel runs on the host between the device steps."""
    if params["kernel"].launch is None:
        return _on_host(eqn, vals)
    from . import user_kernels
    return user_kernels.run(params["kernel"], vals, in_avals, params["out_avals"],
                            params["loops"], params["looped"])


_HANDLERS = {
    **{n: _alias for n in _ALIASES}, "iota": _iota,
    **{n: _index_map_op for n in _INDEX_MAPS}, **{n: _reduce for n in _REDUCE},
    "argmax": _arg_reduce, "argmin": _arg_reduce, "dot_general": _dot,
    "gather": _gather, "dynamic_slice": _gather, "sort": _sort,
    "bitcast_convert_type": _bitcast, "dynamic_update_slice": _scatter,
    **{n: _scatter for n in _SCATTER}, "cond": _control, "while": _control, "scan": _control,
    "numba_call": _numba_call,
}
_plans: dict = {}


def _plan_of(jaxpr) -> _Plan:
    plan = _plans.get(id(jaxpr))
    if plan is None or plan.jaxpr is not jaxpr:
        plan = _plans[id(jaxpr)] = _Plan(jaxpr)
    return plan


class CudaExecutable:
    """A jaxpr compiled for one CUDA device: arguments go to the device (those a CUDA program
    left there are taken as they are), results stay there (``resident.py``)."""

    def __init__(self, jaxpr, name, device):
        self.jaxpr, self.name, self.device, self.text = jaxpr, name, device, None
        self.plan = _Plan(jaxpr)
        self.in_avals = jaxpr.in_avals

    def __call__(self, *args):
        from functrans.core.mesh import SingleDeviceSharding
        from .resident import DeviceResidentArray
        d_args = []
        for a, aval in zip(args, self.in_avals):
            buffer = a.buffer_on(self.device) if type(a) is DeviceResidentArray else None
            d_args.append(buffer if buffer is not None else
                          to_device(a._value if isinstance(a, Array) else a, aval))
        outs = run_jaxpr(self.plan, d_args)
        sharding = SingleDeviceSharding(self.device)
        # Results stay on the device: the next program there takes them as they are.
        return [DeviceResidentArray.wrap(o, v.aval, self.device, sharding)
                for o, v in zip(outs, self.jaxpr.outvars)]
