"""Fused loop nests as native kernels: one kernel per planned :class:`~..lowering.plan.Group`.

A group computes elementwise equations per index of its shape, reads other arrays through
index maps (broadcast, transpose, slice, rev, unit reshapes, iota) and accumulates
reductions in the same pass, as the Numba backend's emitter does (``lowering/emit.py``),
with the same loop styles and precision:

- *flat*: one loop over all elements (every read is a full-shape buffer or a scalar, every
  reduction reduces all axes), reductions summed in blocks of ``BLOCK`` elements in the
  input precision and the blocks in float64 (integers in 64 bits);
- *nested*: one loop per dimension; a reduction whose kept axes are the outer loops keeps a
  scalar accumulator per output element ("suffix"), any other keeps an accumulator array
  over the kept axes ("array").

Loops of at least ``parallel.PARALLEL_MIN`` elements run on all cores: a flat loop in
``UNITS`` runs of blocks, a nested one by outer index. A nested loop with reductions that drop
its outer axis (a bias gradient's column sums) runs in at most ``ROW_UNITS`` runs of outer
indices instead, each accumulating into partials of its own (at most ``PARTIALS_MAX`` bytes in
all), combined in unit order after the loop: results depend on the shape, never on the thread
count or on which thread ran which run.

The kernel's parameters are the group's inputs (data pointers, or values for rank-0 inputs),
its outputs (pointers) and its sizes, so the text does not depend on the sizes.
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Literal, Var
from functrans.transforms.lowering.emit import reduction_identity
from functrans.transforms.lowering.plan import unit_reshape

from . import parallel, scalar
from .ir import REDUCE, Val, const, mem_type, reg_type
from .kernel import Arg, Kernel, memoized

__all__ = ["group_kernel", "BLOCK", "SMALL"]

BLOCK = 4096
UNITS = 64  # work units of a parallel flat loop (a fixed number: sums don't depend on threads)
ROW_UNITS = 16  # work units (runs of outer indices) of a parallel nested loop with partial sums
PARTIALS_MAX = 1 << 22  # bytes of partial accumulators a parallel nested loop may use
SMALL = 16  # groups whose arrays all have at most this many elements are inlined
_INDEX_MAPS = ("broadcast_in_dim", "transpose", "slice", "rev", "iota", "reshape", "squeeze")
_KINDS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
          "reduce_and": "and", "reduce_or": "or", "argmax": "argmax", "argmin": "argmin"}


def _is_load(e, g):
    return e.outputs[0] in g.loads


class _GroupEmitter:
    def __init__(self, g, materialized):
        self.g = g
        self.materialized = materialized
        self.producers = {e.outputs[0]: e for e in g.eqns}
        self.shape = tuple(g.shape)
        self.rank = len(self.shape)
        # Inputs (external vars) in first-use order, outputs in program order.
        self.inputs: list = []
        seen = set()
        for e in g.eqns + g.reductions:
            for x in e.inputs:
                if isinstance(x, Var) and x not in self.producers and x not in seen:
                    seen.add(x)
                    self.inputs.append(x)
        self.stores = [e.outputs[0] for e in g.eqns if e.outputs[0] in materialized]
        self.reductions = list(g.reductions)
        self.flat = self.rank <= 1 or (self._flat_ok() and all(
            set(r.params["axes"]) == set(range(self.rank)) and
            r.prim.name not in ("argmax", "argmin") for r in self.reductions))
        self.extra_dims: dict = {}  # var -> [dim param names] (slice operands)

    def _flat_ok(self):
        return all(e.prim.name not in _INDEX_MAPS or
                   (e.prim.name == "broadcast_in_dim" and not e.inputs[0].aval.shape)
                   for e in self.g.eqns)

    # -- parameters ---------------------------------------------------------------------------
    def build(self) -> Kernel:
        params, args = [], []
        self.ptr, self.val = {}, {}
        for x in self.inputs:
            name = f"%a{len(params)}"
            if x.aval.shape:
                params.append(("ptr noalias readonly", name))
                args.append(Arg("buf", x))
                self.ptr[x] = name
            else:
                params.append((reg_type(x.aval.dtype), name))
                args.append(Arg("scalar", x))
                self.val[x] = Val(reg_type(x.aval.dtype), name)
        self.out_ptr = {}
        for v in self.stores + [r.outputs[0] for r in self.reductions]:
            name = f"%a{len(params)}"
            params.append(("ptr noalias", name))
            args.append(Arg("buf", v))
            self.out_ptr[v] = name
        self.dims = []
        if self.flat and self.rank:
            params.append(("i64", "%n"))
            args.append(Arg("dim", int(np.prod(self.shape))))
            self.n = "%n"
        else:
            for k, d in enumerate(self.shape):
                params.append(("i64", f"%d{k}"))
                args.append(Arg("dim", int(d)))
                self.dims.append(f"%d{k}")
        for e in self.g.eqns:
            if e.prim.name == "slice" and isinstance(e.inputs[0], Var) and \
                    e.inputs[0] not in self.extra_dims and e.inputs[0].aval.shape:
                x = e.inputs[0]
                names = []
                for d in x.aval.shape:
                    names.append(f"%e{sum(map(len, self.extra_dims.values())) + len(names)}")
                    params.append(("i64", names[-1]))
                    args.append(Arg("dim", int(d)))
                self.extra_dims[x] = names
        small = all(int(np.prod(v.aval.shape)) <= SMALL
                    for e in self.g.eqns + self.reductions for v in e.inputs + e.outputs
                    if isinstance(v, Var))
        k = Kernel(params, args, small=small)
        self.k, self.fn, self.mod = k, k.fn, k.mod
        if not self.rank:
            self._scalar_body()
        elif self.allow_parallel and self._parallel_ok():
            self._parallel()
        elif self.flat:
            self._flat()
        else:
            self._nested()
        self.fn.ret()
        return k

    # -- element access ---------------------------------------------------------------------
    def _load(self, ptr, dtype, index) -> Val:
        mt = mem_type(dtype)
        v = self.fn.load(mt, self.fn.gep(mt, ptr, index))
        if np.dtype(dtype).kind == "b":
            return Val("i1", self.fn.op(f"icmp ne i8 {v}, 0"))
        return Val(mt, v)

    def _store(self, v: Val, ptr, dtype, index) -> None:
        mt = mem_type(dtype)
        if np.dtype(dtype).kind == "b":
            v = Val("i8", self.fn.op(f"zext {v} to i8"))
        self.fn.store(v, self.fn.gep(mt, ptr, index))

    def _linear(self, index, dims) -> str:
        """Row-major linear index of ``index`` (i64 operands) in an array of ``dims``."""
        fn = self.fn
        lin = None
        for i, d in zip(index, dims):
            if lin is None:
                lin = i
            else:
                lin = fn.op(f"add i64 {fn.op(f'mul i64 {lin}, {d}')}, {i}")
        return lin if lin is not None else "0"

    def _atom(self, x) -> Val:
        if isinstance(x, Literal):
            return const(x.val, x.aval.dtype)
        return self.val[x]

    def _read(self, x, index, lin, cache) -> Val:
        """Value of ``x`` at the group index ``index`` (``lin``: its linear index)."""
        if isinstance(x, Literal) or not x.aval.shape:
            if isinstance(x, Var) and x in cache:
                return cache[x]
            return self._atom(x)
        if x in cache:
            return cache[x]
        e = self.producers.get(x)
        if e is not None and _is_load(e, self.g):
            v = self._index_map(e, index)
        else:
            v = self._load(self.ptr[x], x.aval.dtype, lin)
        cache[x] = v
        return v

    def _index_map(self, e, index) -> Val:
        """Read the operand of index-map equation ``e`` at output index ``index``."""
        name, p, fn = e.prim.name, e.params, self.fn
        out_shape = e.outputs[0].aval.shape
        if name == "iota":
            v = Val("i64", index[p["dimension"]])
            return scalar.cast(fn, v, np.int64, p["dtype"])
        x = e.inputs[0]
        if isinstance(x, Literal) or not x.aval.shape:
            return self._atom(x)
        src_shape = x.aval.shape
        dims = self._dims_of_group(index)
        if name == "broadcast_in_dim":
            bd = p["broadcast_dimensions"]
            src = ["0" if src_shape[k] == 1 and out_shape[d] != 1 else index[d]
                   for k, d in enumerate(bd)]
            sdims = ["1" if src_shape[k] == 1 and out_shape[d] != 1 else dims[d]
                     for k, d in enumerate(bd)]
        elif name == "transpose":
            src, sdims = [None] * len(index), [None] * len(index)
            for k, d in enumerate(p["permutation"]):
                src[d], sdims[d] = index[k], dims[k]
        elif name == "slice":
            strides = p["strides"] or (1,) * len(index)
            src = []
            for s, i, st in zip(p["start_indices"], index, strides):
                t = i if st == 1 else fn.op(f"mul i64 {i}, {st}")
                src.append(t if s == 0 else fn.op(f"add i64 {t}, {s}"))
            sdims = self.extra_dims[x]
        elif name == "rev":
            src = []
            for k, i in enumerate(index):
                if k in p["dimensions"]:
                    src.append(fn.op(f"sub i64 {fn.op(f'sub i64 {dims[k]}, 1')}, {i}"))
                else:
                    src.append(i)
            sdims = dims
        elif name in ("reshape", "squeeze") and unit_reshape(e):
            big = [(i, d) for i, d, s in zip(index, dims, out_shape) if s != 1]
            it = iter(big)
            src, sdims = [], []
            for s in src_shape:
                if s == 1:
                    src.append("0")
                    sdims.append("1")
                else:
                    i, d = next(it)
                    src.append(i)
                    sdims.append(d)
        else:
            raise NotImplementedError(f"'{name}' is not an index map")
        return self._load(self.ptr[x], x.aval.dtype, self._linear(src, sdims))

    def _dims_of_group(self, index):
        if not self.rank:
            return []
        if self.flat:  # rank 1
            return [self.n]
        return self.dims

    def _compute(self, e, index, lin, cache) -> Val:
        args = [self._read(x, index, lin, cache) for x in e.inputs]
        out = e.outputs[0].aval
        v = scalar.emit(self.fn, self.mod, e.prim.name, args, [x.aval for x in e.inputs], out,
                        e.params, eqn=e)
        cache[e.outputs[0]] = v
        return v

    def _body(self, index, lin) -> dict:
        """Emit the per-element computation and stores; returns the value cache."""
        cache: dict = {}
        for e in self.g.eqns:
            out = e.outputs[0]
            if _is_load(e, self.g):
                if out in self.out_ptr:
                    self._store(self._read(out, index, lin, cache), self.out_ptr[out],
                                out.aval.dtype, lin)
                continue
            v = self._compute(e, index, lin, cache)
            if out in self.out_ptr:
                self._store(v, self.out_ptr[out], out.aval.dtype, lin)
        return cache

    # -- rank 0 -------------------------------------------------------------------------------
    def _scalar_body(self):
        cache: dict = {}
        for e in self.g.eqns:
            out = e.outputs[0]
            if _is_load(e, self.g):
                v = cache[out] = self._index_map(e, [])
            else:
                v = self._compute(e, [], "0", cache)
            if out in self.out_ptr:
                self._store(v, self.out_ptr[out], out.aval.dtype, "0")
        for r in self.reductions:  # reducing no axes of a scalar
            v = self._read(r.inputs[0], [], "0", cache)
            if r.prim.name in ("argmax", "argmin"):
                v = const(0, r.params["index_dtype"])
            self._store(v, self.out_ptr[r.outputs[0]], r.outputs[0].aval.dtype, "0")

    # -- flat loops -------------------------------------------------------------------------------
    def _flat(self, lo="0", hi=None, partials=None):
        """One loop over elements [lo, hi) (default: all). With ``partials`` (a parallel
        chunk), reductions leave their accumulators there instead of storing results."""
        fn = self.fn
        hi = hi or self.n
        reds = [_Reduction(self, r) for r in self.reductions]
        if not reds:
            with fn.loop(hi, start=lo) as i:
                self._body([i], i)
            return
        for r in reds:
            r.flat_outer_init()
        span = hi if lo == "0" else fn.op(f"sub i64 {hi}, {lo}")
        nfull = fn.op(f"sdiv i64 {span}, {BLOCK}")
        with fn.loop(nfull, hint="b") as b:
            first = fn.op(f"mul i64 {b}, {BLOCK}")
            first = first if lo == "0" else fn.op(f"add i64 {first}, {lo}")
            for r in reds:
                r.block_init()
            with fn.loop(str(BLOCK)) as i:
                j = fn.op(f"add i64 {first}, {i}")
                cache = self._body([j], j)
                for r in reds:
                    r.flat_accumulate(self._read(r.eqn.inputs[0], [j], j, cache), j)
            for r in reds:
                r.block_fold()
        for r in reds:
            r.block_init()
        rest = fn.op(f"mul i64 {nfull}, {BLOCK}")
        rest = rest if lo == "0" else fn.op(f"add i64 {rest}, {lo}")
        with fn.loop(hi, start=rest) as j:
            cache = self._body([j], j)
            for r in reds:
                r.flat_accumulate(self._read(r.eqn.inputs[0], [j], j, cache), j)
        for k, r in enumerate(reds):
            r.block_fold()
            if partials is None:
                r.flat_finish()
            else:
                partials(k, r)

    # -- nested loops -----------------------------------------------------------------------------
    def _nested(self, lo="0", hi=None, partial=None):
        """Loops over every index, the outermost over [lo, hi) (default: all). With
        ``partial`` (a parallel chunk's unit), the reductions that need them accumulate into
        ``partial(eqn)``, the unit's accumulators, and leave their results there."""
        fn = self.fn
        reds = [_Reduction(self, r) for r in self.reductions]
        for r in reds:
            if partial is not None and r.eqn in self.partial_bufs:
                r.into(partial(r.eqn))
            else:
                r.setup()
        idx, lins = [], []
        loops = []
        for k in range(self.rank):
            for r in reds:
                r.open_level(k)
            cm = fn.loop(hi or self.dims[0], start=lo) if k == 0 else fn.loop(self.dims[k])
            i = cm.__enter__()
            loops.append(cm)
            idx.append(i)
            lins.append(i if k == 0 else
                        fn.op(f"add i64 {fn.op(f'mul i64 {lins[-1]}, {self.dims[k]}')}, {i}"))
        cache = self._body(idx, lins[-1])
        for r in reds:
            r.accumulate(self._read(r.eqn.inputs[0], idx, lins[-1], cache), idx)
        for k in reversed(range(self.rank)):
            loops[k].__exit__(None, None, None)
            for r in reds:
                r.close_level(k, idx[:k])
        for r in reds:
            if not r.partial:
                r.finish()

    def _nested_units(self, start, stop, rows):
        """A chunk's units of a nested loop with partial accumulators: unit ``u`` runs outer
        indices [u * rows, (u + 1) * rows) into accumulators of its own."""
        fn = self.fn
        with fn.loop(stop, start=start, hint="u") as u:
            lo = fn.op(f"mul i64 {u}, {rows}")
            end = fn.op(f"add i64 {lo}, {rows}")
            hi = fn.op(f"select i1 {fn.op(f'icmp slt i64 {end}, {self.dims[0]}')}, "
                       f"i64 {end}, i64 {self.dims[0]}")

            def partial(eqn, u=u):
                size = _accumulators(eqn) * _Reduction.acc_dtype_of(eqn).itemsize
                return fn.gep("i8", self.partial_bufs[eqn], fn.op(f"mul i64 {u}, {size}"))
            self._nested(lo, hi, partial=partial)

    # -- on all cores -----------------------------------------------------------------------------
    def _parallel_ok(self) -> bool:
        if int(np.prod(self.shape)) < parallel.PARALLEL_MIN:
            return False
        if self.flat:
            return all(r.prim.name == "reduce_sum" for r in self.reductions)
        if self.shape[0] <= 1:
            return False
        self.partial_eqns = [r for r in self.reductions if not _per_outer_index(r)]
        if any(r.prim.name in ("argmax", "argmin") for r in self.partial_eqns):
            return False
        return not self.partial_eqns or self._row_units() >= 2

    def _row_units(self) -> int:
        """Work units of a nested loop whose reductions keep partial accumulators per unit:
        at most ``ROW_UNITS`` runs of outer indices, fewer when their accumulators would
        pass ``PARTIALS_MAX`` bytes."""
        per_unit = sum(_accumulators(r) * _Reduction.acc_dtype_of(r).itemsize
                       for r in self.partial_eqns)
        return min(ROW_UNITS, self.shape[0], PARTIALS_MAX // max(1, per_unit))

    def _parallel(self):
        """The loop split over the thread pool: the body in a chunk function running a range
        of work units. Nested loops: a unit is an index of the outermost loop. Flat loops: a
        unit is one of at most ``UNITS`` runs of whole blocks; each sum keeps a partial per
        unit, added in unit order afterwards, so results do not depend on the thread count
        (nor on how the threading layer hands units out)."""
        k, main = self.k, self.fn
        k.parallel = True
        partials = [] if self.flat else self.partial_eqns
        if partials:  # (parameters, so before the chunk reads them back)
            units = self._row_units()
            rows = -(-self.shape[0] // units)
            units = -(-self.shape[0] // rows)
            self.partial_bufs = {r: k.scratch(units * _accumulators(r) *
                                              _Reduction.acc_dtype_of(r).itemsize)
                                 for r in partials}
        chunk, start, count = parallel.chunk_function(k.params)
        self.fn = chunk
        stop = chunk.op(f"add i64 {start}, {count}")
        slots = len(k.params)
        if partials:
            self._nested_units(start, stop, rows)
        elif not self.flat:
            self._nested(start, stop)
            units = self.dims[0]
        else:
            per = chunk.load("i64", chunk.gep("i64", "%data", str(slots)))
            with chunk.loop(stop, start=start, hint="u") as u:
                lo = chunk.op(f"mul i64 {u}, {per}")
                end = chunk.op(f"add i64 {lo}, {per}")
                hi = chunk.op(f"select i1 {chunk.op(f'icmp slt i64 {end}, {self.n}')}, "
                              f"i64 {end}, i64 {self.n}")

                def partial(i, r, u=u):  # the unit's accumulator into partials i
                    ty = reg_type(r.acc_dtype)
                    base = chunk.load("ptr", chunk.gep("i64", "%data", str(slots + 1 + i)))
                    chunk.store(Val(ty, chunk.load(ty, r.acc)), chunk.gep(ty, base, u))
                self._flat(lo, hi, partials=partial)
            # the whole-block length of a unit, and the number of units
            blocks = main.op(f"sdiv i64 {main.op(f'add i64 {self.n}, {BLOCK - 1}')}, {BLOCK}")
            per_ = main.op(f"sdiv i64 {main.op(f'add i64 {blocks}, {UNITS - 1}')}, {UNITS}")
            per_ = main.op(f"mul i64 {per_}, {BLOCK}")
            main.store(Val("i64", per_), parallel.data_slot(k, slots))
            last = main.op(f"sub i64 {main.op(f'add i64 {self.n}, {per_}')}, 1")
            units = main.op(f"sdiv i64 {last}, {per_}")  # ceil(n / per)
        chunk.ret()
        self.fn = main
        k.helpers.append(chunk)
        reds = [_Reduction(self, r) for r in self.reductions] if self.flat else []
        bufs = []
        for i, r in enumerate(reds):
            ty = reg_type(r.acc_dtype)
            buf = main.op(f"alloca {ty}, i64 {UNITS}, align 16")
            main.store(Val("ptr", buf), parallel.data_slot(k, slots + 1 + i))
            bufs.append(buf)
        parallel.launch(k, units, parallel.threads(k))
        for eqn in partials:
            _Reduction(self, eqn).combine_units(self.partial_bufs[eqn], units)
        for r, buf in zip(reds, bufs):
            ty = reg_type(r.acc_dtype)
            acc = main.alloca(ty)
            main.store(r.identity(r.acc_dtype), acc)
            with main.loop(units, hint="t") as t:
                cur = Val(ty, main.load(ty, acc))
                part = Val(ty, main.load(ty, main.gep(ty, buf, t)))
                main.store(r.combine(cur, r.acc_dtype, part, r.acc_dtype), acc)
            self._store(scalar.cast(main, Val(ty, main.load(ty, acc)), r.acc_dtype, r.out_dtype),
                        self.out_ptr[r.out], r.out_dtype, "0")


def _per_outer_index(eqn) -> bool:
    """Whether a reduction's results each come from one index of the outermost loop (it
    keeps axis 0, and its kept axes lead): units of outer indices never share one."""
    kept = [d for d in range(len(eqn.inputs[0].aval.shape)) if d not in eqn.params["axes"]]
    return bool(kept) and kept == list(range(len(kept)))


def _accumulators(eqn) -> int:
    return int(np.prod(eqn.outputs[0].aval.shape))


class _Reduction:
    """One reduction fused into the group's loops (styles: see the module docstring)."""

    def __init__(self, em: _GroupEmitter, eqn):
        self.em, self.eqn, self.fn = em, eqn, em.fn
        self.kind = _KINDS[eqn.prim.name]
        self.is_arg = self.kind in ("argmax", "argmin")
        self.axes = tuple(eqn.params["axes"])
        self.in_dtype = np.dtype(eqn.inputs[0].aval.dtype)
        self.out = eqn.outputs[0]
        self.out_dtype = np.dtype(self.out.aval.dtype)
        k = self.in_dtype.kind
        self.acc_dtype = self.acc_dtype_of(eqn)
        # Integer partial sums are 64-bit too (Numba widens integer arithmetic).
        self.part_dtype = self.acc_dtype if k in "iu" else self.in_dtype
        rank = em.rank
        self.kept = [d for d in range(rank) if d not in self.axes]
        self.level = len(self.kept)
        self.style = "suffix" if self.kept == list(range(self.level)) else "array"
        self.acc = self.part = self.best = None
        self.partial = False

    @staticmethod
    def acc_dtype_of(eqn) -> np.dtype:
        """The accumulators' dtype: sums and products of floats and integers in 64 bits."""
        dt = np.dtype(eqn.inputs[0].aval.dtype)
        if _KINDS[eqn.prim.name] in ("sum", "prod") and dt.kind in "fiu":
            return np.dtype({"f": np.float64, "i": np.int64, "u": np.uint64}[dt.kind])
        return dt

    def identity(self, dtype) -> Val:
        return const(reduction_identity(self.kind, dtype), dtype)

    def combine(self, acc: Val, acc_dtype, v: Val, v_dtype) -> Val:
        v = scalar.cast(self.fn, v, v_dtype, acc_dtype)
        fn, k = self.fn, np.dtype(acc_dtype).kind
        if self.kind in ("sum", "prod"):
            if k == "f":
                op = "fadd" if self.kind == "sum" else "fmul"
                return Val(acc.ty, fn.op(f"{op} {REDUCE} {acc}, {v.ref}"))
            if k == "b":
                op = "or" if self.kind == "sum" else "and"
            else:
                op = "add" if self.kind == "sum" else "mul"
            return Val(acc.ty, fn.op(f"{op} {acc}, {v.ref}"))
        if self.kind in ("and", "or"):
            return Val(acc.ty, fn.op(f"{self.kind} {acc}, {v.ref}"))
        aval = type("A", (), {"dtype": np.dtype(acc_dtype)})()
        return scalar.emit(fn, self.em.mod, self.kind, [acc, v], [aval, aval], aval, {})

    def _slot(self, dtype, init: Val) -> str:
        s = self.fn.alloca(reg_type(dtype))
        self.fn.store(init, s)
        return s

    def _arg_update(self, v: Val, pos: str, acc_ptr, best_ptr):
        fn = self.fn
        acc = Val(v.ty, fn.load(v.ty, acc_ptr))
        best = fn.load("i64", best_ptr)
        k = self.in_dtype.kind
        if k == "f":
            better = fn.op(f"fcmp {'ogt' if self.kind == 'argmax' else 'olt'} {v}, {acc.ref}")
            first_nan = fn.op(f"and i1 {fn.op(f'fcmp uno {v}, {v.ref}')}, "
                              f"{fn.op(f'fcmp ord {acc}, {acc.ref}')}")
            better = fn.op(f"or i1 {better}, {first_nan}")
        else:
            pred = {"argmax": "sgt", "argmin": "slt"}[self.kind]
            if k in "ub":
                pred = "u" + pred[1:]
            better = fn.op(f"icmp {pred} {v}, {acc.ref}")
        take = fn.op(f"or i1 {fn.op(f'icmp slt i64 {best}, 0')}, {better}")
        fn.store(Val(v.ty, fn.op(f"select i1 {take}, {v}, {acc}")), acc_ptr)
        fn.store(Val("i64", fn.op(f"select i1 {take}, i64 {pos}, i64 {best}")), best_ptr)

    def _result(self, acc_ptr, best_ptr, acc_dtype) -> Val:
        fn = self.fn
        if self.is_arg:
            return scalar.cast(fn, Val("i64", fn.load("i64", best_ptr)), np.int64,
                               self.out_dtype)
        ty = reg_type(acc_dtype)
        return scalar.cast(fn, Val(ty, fn.load(ty, acc_ptr)), acc_dtype, self.out_dtype)

    # flat style
    def flat_outer_init(self):
        if self.is_arg:
            self.acc = self._slot(self.in_dtype, self.identity(self.in_dtype))
            self.best = self._slot(np.int64, Val("i64", "-1"))
        else:
            self.acc = self._slot(self.acc_dtype, self.identity(self.acc_dtype))
            self.part = self.fn.alloca(reg_type(self.part_dtype))

    def block_init(self):
        if not self.is_arg:
            self.fn.store(self.identity(self.part_dtype), self.part)

    def flat_accumulate(self, v: Val, pos):
        if self.is_arg:
            self._arg_update(v, pos, self.acc, self.best)
            return
        ty = reg_type(self.part_dtype)
        part = Val(ty, self.fn.load(ty, self.part))
        self.fn.store(self.combine(part, self.part_dtype, v, self.in_dtype), self.part)

    def block_fold(self):
        if self.is_arg:
            return
        fn = self.fn
        pty, aty = reg_type(self.part_dtype), reg_type(self.acc_dtype)
        acc = Val(aty, fn.load(aty, self.acc))
        part = Val(pty, fn.load(pty, self.part))
        fn.store(self.combine(acc, self.acc_dtype, part, self.part_dtype), self.acc)

    def flat_finish(self):
        v = self._result(self.acc, self.best, self.acc_dtype)
        self.em._store(v, self.em.out_ptr[self.out], self.out_dtype, "0")

    # nested styles
    def setup(self):
        if self.style != "array":
            return
        fn, em = self.fn, self.em
        size = "1"
        for d in self.kept:
            size = fn.op(f"mul i64 {size}, {em.dims[d]}")
        self.size = size
        dt = self.in_dtype if self.is_arg else self.acc_dtype
        # Accumulators over the kept axes: scratch memory the caller lends for the call.
        count = int(np.prod(self.out.aval.shape))
        self.acc = em.k.scratch(count * np.dtype(dt).itemsize)
        with fn.loop(size) as i:
            self._store_at(self.identity(dt), self.acc, dt, i)
        if self.is_arg:
            self.best = em.k.scratch(count * 8)
            with fn.loop(size) as i:
                fn.store(Val("i64", "-1"), fn.gep("i64", self.best, i))

    def into(self, ptr) -> None:
        """Accumulate over the kept axes into ``ptr`` (a parallel unit's partials, set to
        the identity here) and leave the results there."""
        fn, em = self.fn, self.em
        self.style, self.partial, self.acc = "array", True, ptr
        self.size = str(_accumulators(self.eqn))
        with fn.loop(self.size) as i:
            self._store_at(self.identity(self.acc_dtype), ptr, self.acc_dtype, i)

    def combine_units(self, ptr, units: int) -> None:
        """Store the results: each output the combination of the ``units`` partials at
        ``ptr`` in unit order (the same order whichever thread ran which unit)."""
        fn, em = self.fn, self.em
        dt, ty, count = self.acc_dtype, reg_type(self.acc_dtype), _accumulators(self.eqn)
        acc = fn.alloca(ty)
        with fn.loop(str(count)) as i:
            fn.store(self.identity(dt), acc)
            with fn.loop(str(units), hint="t") as u:
                cell = em._load(ptr, dt, fn.op(f"add i64 {fn.op(f'mul i64 {u}, {count}')}, {i}"))
                fn.store(self.combine(Val(ty, fn.load(ty, acc)), dt, cell, dt), acc)
            v = scalar.cast(fn, Val(ty, fn.load(ty, acc)), dt, self.out_dtype)
            em._store(v, em.out_ptr[self.out], self.out_dtype, i)

    def _store_at(self, v, ptr, dtype, index):
        self.em._store(v, ptr, dtype, index)

    def open_level(self, k):
        if self.style != "suffix" or self.level != k:
            return
        if self.is_arg:
            self.acc = self._slot(self.in_dtype, self.identity(self.in_dtype))
            self.best = self._slot(np.int64, Val("i64", "-1"))
        else:
            self.acc = self._slot(self.acc_dtype, self.identity(self.acc_dtype))

    def accumulate(self, v: Val, idx):
        fn = self.fn
        if self.style == "suffix":
            if self.is_arg:
                self._arg_update(v, idx[self.axes[0]], self.acc, self.best)
            else:
                ty = reg_type(self.acc_dtype)
                acc = Val(ty, fn.load(ty, self.acc))
                fn.store(self.combine(acc, self.acc_dtype, v, self.in_dtype), self.acc)
            return
        em = self.em
        key = em._linear([idx[d] for d in self.kept], [em.dims[d] for d in self.kept])
        if self.is_arg:
            mt = mem_type(self.in_dtype)
            self._arg_update_mem(v, idx[self.axes[0]], fn.gep(mt, self.acc, key),
                                 fn.gep("i64", self.best, key))
        else:
            dt = self.acc_dtype
            cell = em._load(self.acc, dt, key)
            em._store(self.combine(cell, dt, v, self.in_dtype), self.acc, dt, key)

    def _arg_update_mem(self, v, pos, acc_ptr, best_ptr):
        if self.in_dtype.kind == "b":  # bytes in memory, i1 in registers
            tmp = self._slot(np.bool_, Val("i1", "false"))
            byte = self.fn.load("i8", acc_ptr)
            self.fn.store(Val("i1", self.fn.op(f"icmp ne i8 {byte}, 0")), tmp)
            self._arg_update(v, pos, tmp, best_ptr)
            bit = self.fn.load("i1", tmp)
            self.fn.store(Val("i8", self.fn.op(f"zext i1 {bit} to i8")), acc_ptr)
            return
        self._arg_update(v, pos, acc_ptr, best_ptr)

    def close_level(self, k, outer_idx):
        if self.style != "suffix" or self.level != k:
            return
        em = self.em
        v = self._result(self.acc, self.best, self.acc_dtype)
        lin = em._linear(outer_idx, [em.dims[d] for d in range(k)]) if k else "0"
        em._store(v, em.out_ptr[self.out], self.out_dtype, lin)

    def finish(self):
        if self.style != "array":
            return
        fn, em = self.fn, self.em
        with fn.loop(self.size) as i:
            if self.is_arg:
                v = scalar.cast(fn, Val("i64", fn.load("i64", fn.gep("i64", self.best, i))),
                                np.int64, self.out_dtype)
            else:
                v = scalar.cast(fn, em._load(self.acc, self.acc_dtype, i), self.acc_dtype,
                                self.out_dtype)
            em._store(v, em.out_ptr[self.out], self.out_dtype, i)


def group_kernel(g, materialized, allow_parallel=False) -> Kernel:
    """The kernel computing planned group ``g`` (``materialized``: the values stored);
    loops of at least ``parallel.PARALLEL_MIN`` elements run on all cores when
    ``allow_parallel`` (programs that call BLAS leave the cores to its threads). A group of
    the same form as one built before (another layer of a deep net) shares its kernel."""
    def build():
        em = _GroupEmitter(g, materialized)
        em.allow_parallel = allow_parallel
        return em.build()
    context = (tuple(g.shape), bool(allow_parallel), tuple(e.outputs[0] in g.loads
                                                           for e in g.eqns))
    return memoized(g.eqns + g.reductions, context, materialized, build)
