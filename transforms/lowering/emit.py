"""Python source generation for a planned jaxpr: one Numba kernel per jaxpr.

The kernel takes the jaxpr's inputs (arrays, or scalars for rank-0 values) and its array
constants, and returns a tuple of outputs. Each fused :class:`~.plan.Group` becomes one loop
nest; loop bounds come from the shapes of its input buffers where it has any, so kernels that
differ only in sizes share their source (and one Numba compile). The source is readable:
``jit(f).lower(x).as_text()`` shows it.
"""
from __future__ import annotations

import math

import numpy as np

from functrans.core.ir import Literal, Var, walk_jaxprs

from .plan import REDUCTIONS, Group, Op, plan, unit_reshape
from .unrolled import combine, emit_unrolled, is_small, wants_unrolled
from .scalar import dtype_ctor, result_typed, scalar_rules

BLOCK = 4096  # reduction block: summed in the input precision, blocks summed in float64
PARALLEL_MIN = 1 << 18  # loops over at least this many elements use prange (all cores)


class LoweringError(NotImplementedError):
    """A primitive or case the Numba lowering does not support."""


def _float_text(f: float) -> str:
    return "np.nan" if math.isnan(f) else ("np.inf" if f == math.inf else
                                           "-np.inf" if f == -math.inf else repr(f))


def const_text(v, dtype) -> str:
    """Python source of a typed constant: ``np.float32(0.5)``, ``np.bool_(True)``, ..."""
    if dtype.kind == "f":
        text = _float_text(float(v))
    elif dtype.kind == "c":
        text = f"complex({_float_text(float(v.real))}, {_float_text(float(v.imag))})"
    elif dtype.kind == "b":
        text = repr(bool(v))
    else:
        text = repr(int(v))
    return f"{dtype_ctor(dtype)}({text})"


class Emitter:
    def __init__(self):
        self.materialized: set = set()
        self.extra_params: list = []  # (name, value): arrays that sub-jaxprs close over
        self.elems: dict = {}  # unrolled small arrays: var -> element expressions (C order)
        self.var_count = 0
        self.allow_parallel = True
        self.packs: list = [[]]  # per open block: unrolled vars packed into arrays there
        self.names: dict = {}
        self.consts: dict = {}
        self.const_values: dict = {}  # constant name -> its NumPy scalar (for the rules)
        self.const_lines: list = []
        self.lines: list = []
        self.line_eqns: list = []
        self.level = 1
        self.count = 0
        self.parallel = False
        self.eqn = None
        self.buffers = None  # inside loops: where arrays live (lowering.control.LoopBuffers)

    # ---- names, constants, lines -----------------------------------------------------------
    def fresh(self, prefix="t") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def name(self, var) -> str:
        n = self.names.get(var)
        if n is None:
            n = self.names[var] = f"v{self.var_count}"
            self.var_count += 1
        return n

    def const(self, value, dtype) -> str:
        dtype = np.dtype(dtype)
        v = np.asarray(value).astype(dtype)[()]
        key = (dtype, np.asarray(v).tobytes())
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"_c{len(self.consts)}"
            self.const_lines.append(f"{name} = {const_text(v, dtype)}")
            self.const_values[name] = v
        return name

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)
        self.line_eqns.append(self.eqn)

    def tmp(self, expr: str) -> str:
        n = self.fresh()
        self.line(f"{n} = {expr}")
        return n

    def cast(self, expr: str, dtype) -> str:
        return f"{dtype_ctor(dtype)}({expr})"

    def typed(self, expr: str, eqn) -> str:
        """A scalar rule's expression for ``eqn``, cast to its output dtype where needed."""
        out = eqn.outputs[0].aval
        if result_typed(eqn.prim.name, [x.aval for x in eqn.inputs], out):
            return expr
        return self.cast(expr, out.dtype)

    def atom(self, x) -> str:
        """The name of a value outside any loop: a scalar variable or an array (unrolled
        small arrays are packed into one, once per block)."""
        if isinstance(x, Literal):
            return self.const(x.val, x.aval.dtype)
        if x in self.elems and x not in self.names:
            self._pack(x)
        return self.name(x)

    def _pack(self, x):
        buf = self.name(x)
        self.empty(buf, [str(d) for d in x.aval.shape], x.aval.dtype)
        for idx, e in zip(np.ndindex(*x.aval.shape), self.elems[x]):
            self.line(f"{buf}[{', '.join(map(str, idx))}] = {e}")
        self.packs[-1].append(x)  # the array exists only in this block

    def elements(self, x) -> list:
        """Element expressions of a value (C order); a rank-0 value is one element."""
        if isinstance(x, Literal):
            return [self.const(x.val, x.aval.dtype)]
        if x in self.elems:
            return self.elems[x]
        name = self.name(x)
        if not x.aval.shape:
            return [name]
        return [f"{name}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*x.aval.shape)]

    def set_elements(self, var, elems) -> None:
        self.elems[var] = list(elems)
        self.names.pop(var, None)

    def value(self, x):
        """How a nested block hands back a value: elements for small arrays, else a name."""
        if not isinstance(x, Literal) and is_small(x.aval):
            return self.elements(x)
        return self.atom(x)

    def alloc(self, var, shape_exprs) -> str:
        """Define ``name(var)`` as a writable array for ``var``'s value: inside a loop, the
        buffer the loop gives it (a carry, a row of a stacked output, or one allocated once
        before the loop), else a new array."""
        name = self.name(var)
        where = self.buffers.place(self, var) if self.buffers is not None else None
        if where is None:
            self.empty(name, shape_exprs, var.aval.dtype)
        elif where != name:
            self.line(f"{name} = {where}")
        return name

    def empty(self, name, shape_exprs, dtype):
        shape = ", ".join(shape_exprs) + ("," if len(shape_exprs) == 1 else "")
        self.line(f"{name} = np.empty(({shape}), dtype={dtype_ctor(dtype)})")

    # ---- blocks ------------------------------------------------------------------------------
    def block(self, jaxpr, inputs=None, consts_are_params=False) -> list:
        """Emit ``jaxpr``'s equations at the current indentation; returns its outputs as
        :meth:`value` gives them. ``inputs`` are its inputs (names, or element lists for small
        arrays) when it is nested: a branch or a loop body."""
        from .ops import op_rules
        if inputs is not None:
            for v, n in zip(jaxpr.invars, inputs):
                if isinstance(n, list):
                    self.set_elements(v, [self._single(e) for e in n])
                else:
                    self.names[v] = self._single(n)
                    self.elems.pop(v, None)
        if not consts_are_params:
            for v, c in zip(jaxpr.constvars, jaxpr.consts):
                self.names[v] = self.closed_over(c, v.aval)
        steps, materialized = plan(jaxpr, unrolled=wants_unrolled)
        saved, self.materialized = self.materialized, materialized
        self.packs.append([])
        for step in steps:
            if isinstance(step, Group):
                self.group(step)
                continue
            self.eqn = step.eqn
            if wants_unrolled(step.eqn):
                emit_unrolled(self, step.eqn)
                continue
            rule = op_rules.get(step.eqn.prim.name)
            if rule is None:
                where = f" (from {step.eqn.source})" if step.eqn.source else ""
                raise LoweringError(f"jit cannot compile '{step.eqn.prim.name}'{where}: it "
                                    "has no Numba lowering")
            rule(self, step.eqn)
            if any(True for _ in walk_jaxprs(step.eqn.params)):
                self._rebind_outputs(step.eqn.outputs)
        outs = [self.value(x) for x in jaxpr.outvars]
        for var in self.packs.pop():  # arrays packed in this block don't exist outside it
            self.names.pop(var, None)
        self.materialized = saved
        return outs

    # Numba rebuilds SSA form for every variable assigned more than once, and finds the
    # definition reaching each use by walking up the dominator tree recursively (two Python
    # frames per block). Loop carries and branch results are such variables; a use hundreds
    # of blocks below (a long loop body, the rest of the kernel after a loop) would overflow
    # Python's stack and costs time per block. So nested blocks read their inputs, and the
    # code after a loop or branch reads its results, through fresh names assigned once.
    def _single(self, expr):
        if isinstance(expr, str) and expr.isidentifier() and expr not in self.const_values:
            return self.tmp(expr)
        return expr

    def _rebind_outputs(self, outputs):
        for var in outputs:
            if var in self.elems:
                self.elems[var] = [self._single(e) for e in self.elems[var]]
            elif var in self.names:
                self.names[var] = self._single(self.names[var])

    def closed_over(self, value, aval) -> str:
        """A name for a constant of a nested jaxpr: a typed literal, or an extra kernel
        argument for arrays."""
        if not aval.shape:
            return self.const(np.asarray(value), aval.dtype)
        name = f"k{len(self.extra_params)}"
        self.extra_params.append((name, value))
        self.lines.insert(0, f"    {name} = rt.mutable(a{name})")
        self.line_eqns.insert(0, None)
        return name

    # ---- groups ----------------------------------------------------------------------------
    def group(self, g: Group):
        for e in g.eqns + g.reductions:  # loops read buffers: pack unrolled inputs
            for x in e.inputs:
                if not isinstance(x, Literal) and x in self.elems:
                    self.atom(x)
        if not g.shape:
            return self._scalar_group(g)
        rank = len(g.shape)
        self.eqn = (g.eqns + g.reductions)[0]
        producers = {e.outputs[0]: e for e in g.eqns}
        dims = self._loop_dims(g, producers)
        stores = [e.outputs[0] for e in g.eqns if e.outputs[0] in self.materialized]
        for v in stores:
            self.alloc(v, dims)
        reds = [_Reduction(self, e, rank) for e in g.reductions]
        size = int(np.prod(g.shape))
        flat = rank == 1 or (self._flat_ok(g, producers) and all(r.all_axes for r in reds)
                             and not any(r.is_arg for r in reds))
        if flat:
            self._flat_loop(g, producers, dims, stores, reds, size)
        else:
            self._nested_loops(g, producers, dims, stores, reds, size)

    def _loop_dims(self, g, producers):
        """Loop bounds: from a full-shape input buffer when there is one (shape-generic code)."""
        for e in g.eqns + g.reductions:
            for x in e.inputs:
                if isinstance(x, Var) and x not in producers and x.aval.shape == g.shape \
                        and e.prim.name not in ("slice",):
                    src = self.name(x)
                    return [self.tmp(f"{src}.shape[{k}]") for k in range(len(g.shape))]
        return [str(d) for d in g.shape]

    def _flat_ok(self, g, producers):
        """One flat loop works when every array read is a full-shape buffer (no index maps)."""
        return all(e.prim.name not in ("broadcast_in_dim", "transpose", "slice", "rev", "iota",
                                       "reshape", "squeeze") or
                   (e.prim.name == "broadcast_in_dim" and not e.inputs[0].aval.shape)
                   for e in g.eqns)

    def _flat_loop(self, g, producers, dims, stores, reds, size):
        n = self.tmp(" * ".join(dims)) if len(dims) > 1 else dims[0]
        views = {}

        def view(buf):
            if len(g.shape) == 1:
                return buf
            if buf not in views:
                views[buf] = self.tmp(f"{buf}.reshape({n})")
            return views[buf]

        for v in stores:
            view(self.name(v))
        for e in g.eqns + g.reductions:  # views are made before the loop, not per element
            for x in e.inputs:
                if isinstance(x, Var) and x not in producers and x.aval.shape == g.shape:
                    view(self.name(x))
        parallel = self.allow_parallel and size >= PARALLEL_MIN and all(
            r.kind == "sum" for r in reds)
        self.parallel |= parallel
        rng = "nb.prange" if parallel else "range"
        if not reds:
            i = self.fresh("i")
            self.line(f"for {i} in {rng}({n}):")
            self.level += 1
            self._body(g, producers, lambda x: f"{view(self.name(x))}[{i}]", [i], stores,
                       lambda v: f"{view(self.name(v))}[{i}]")
            self.level -= 1
            return
        # Reductions: full blocks of a fixed length (a known trip count lets LLVM interleave
        # the vector loop), each summed in the input precision, then the remainder.
        for r in reds:
            r.flat_outer_init()
        nfull = self.tmp(f"{n} // {BLOCK}")
        b = self.fresh("b")
        self.line(f"for {b} in {rng}({nfull}):")
        self.level += 1
        lo = self.tmp(f"{b} * {BLOCK}")
        blocks = {}

        def block(buf):
            if buf not in blocks:
                blocks[buf] = self.tmp(f"{view(buf)}[{lo}:{lo} + {BLOCK}]")
            return blocks[buf]

        for v in stores:
            block(self.name(v))
        for x in list(views):
            block(x)
        for r in reds:
            r.flat_block_init()
        i = self.fresh("i")
        self.line(f"for {i} in range({BLOCK}):")
        self.level += 1
        value = self._body(g, producers, lambda x: f"{block(self.name(x))}[{i}]", [i], stores,
                           lambda v: f"{block(self.name(v))}[{i}]")
        for r in reds:
            r.flat_accumulate(value(r.eqn.inputs[0]), f"{lo} + {i}")
        self.level -= 1
        for r in reds:
            r.flat_block_fold()
        self.level -= 1
        for r in reds:
            r.flat_block_init()
        j = self.fresh("i")
        self.line(f"for {j} in range({nfull} * {BLOCK}, {n}):")
        self.level += 1
        value = self._body(g, producers, lambda x: f"{view(self.name(x))}[{j}]", [j], stores,
                           lambda v: f"{view(self.name(v))}[{j}]")
        for r in reds:
            r.flat_accumulate(value(r.eqn.inputs[0]), j)
        self.level -= 1
        for r in reds:
            r.flat_block_fold()
            r.flat_finish()

    def _nested_loops(self, g, producers, dims, stores, reds, size):
        rank = len(g.shape)
        idx = [self.fresh("i") for _ in range(rank)]
        for r in reds:
            r.setup(dims)
        parallel = self.allow_parallel and size >= PARALLEL_MIN and g.shape[0] > 1 and all(
            r.style == "suffix" and r.level >= 1 for r in reds)
        self.parallel |= parallel
        for k in range(rank):
            for r in reds:
                r.open_level(k)
            rng = "nb.prange" if (parallel and k == 0) else "range"
            self.line(f"for {idx[k]} in {rng}({dims[k]}):")
            self.level += 1
        index = ", ".join(idx)
        value = self._body(g, producers, lambda x: f"{self.name(x)}[{index}]", idx, stores,
                           lambda v: f"{self.name(v)}[{index}]")
        for r in reds:
            r.accumulate(value(r.eqn.inputs[0]), idx)
        for k in reversed(range(rank)):
            self.level -= 1
            for r in reds:
                r.close_level(k, idx[:k])
        for r in reds:
            r.finish()

    def _body(self, g, producers, read_full, idx, stores, store_at):
        """Emit the per-element computation; returns a lookup value(var) -> expression."""
        vals: dict = {}

        def load(x, index):
            if isinstance(x, Literal):
                return self.const(x.val, x.aval.dtype)
            if x in vals and index is idx:
                return vals[x]
            e = producers.get(x)
            if e is not None and e.outputs[0] in g.loads:
                return self._index_map(e, index, load)
            if not x.aval.shape:
                return self.name(x)
            if index is idx:
                return read_full(x)
            return f"{self.name(x)}[{', '.join(index)}]"

        for e in g.eqns:
            self.eqn = e
            out = e.outputs[0]
            if out in g.loads:
                if out in self.materialized:
                    self.line(f"{store_at(out)} = {load(out, idx)}")
                continue
            args = [load(x, idx) for x in e.inputs]
            in_avals = [x.aval for x in e.inputs]
            rule = scalar_rules.get(e.prim.name)
            if rule is None:
                raise LoweringError(f"no Numba lowering for elementwise '{e.prim.name}'")
            expr = rule(self, args, in_avals, out.aval, **e.params)
            vals[out] = self.tmp(self.typed(expr, e))
            if out in self.materialized:
                self.line(f"{store_at(out)} = {vals[out]}")
        return lambda x: load(x, idx)

    def _index_map(self, e, index, load):
        """Read the operand of an index-map equation at the index ``index`` of its output."""
        name, p = e.prim.name, e.params
        if name == "iota":
            return self.cast(index[p["dimension"]], p["dtype"])
        x = e.inputs[0]
        if name == "broadcast_in_dim":
            src = ["0" if x.aval.shape[k] == 1 and p["shape"][d] != 1 else index[d]
                   for k, d in enumerate(p["broadcast_dimensions"])]
        elif name == "transpose":
            src = [None] * len(index)
            for k, d in enumerate(p["permutation"]):
                src[d] = index[k]
        elif name == "slice":
            strides = p["strides"] or (1,) * len(index)
            src = [f"({s} + {i} * {st})" if st != 1 else (f"({s} + {i})" if s else i)
                   for s, i, st in zip(p["start_indices"], index, strides)]
        elif name == "rev":
            src = [f"({x.aval.shape[k] - 1} - {i})" if k in p["dimensions"] else i
                   for k, i in enumerate(index)]
        elif name in ("reshape", "squeeze") and unit_reshape(e):
            big = [i for i, d in zip(index, e.outputs[0].aval.shape) if d != 1]
            it = iter(big)
            src = ["0" if d == 1 else next(it) for d in x.aval.shape]
        else:
            raise LoweringError(f"'{name}' is not an index map")
        return load(x, src)

    def _scalar_group(self, g: Group):
        vals = {}
        producers = {e.outputs[0]: e for e in g.eqns}

        def load(y, index):
            if isinstance(y, Literal) or not y.aval.shape:
                return value(y)
            return f"{self.name(y)}[{', '.join(index)}]"

        def value(x):
            if isinstance(x, Literal):
                return self.const(x.val, x.aval.dtype)
            if x in vals:
                return vals[x]
            e = producers.get(x)
            if e is not None and e.outputs[0] in g.loads:
                return self._index_map(e, [], load)
            return self.name(x)

        for e in g.eqns:
            self.eqn = e
            out = e.outputs[0]
            if out in g.loads:
                vals[out] = self.tmp(value(out))
            else:
                rule = scalar_rules[e.prim.name]
                expr = rule(self, [value(x) for x in e.inputs], [x.aval for x in e.inputs],
                            out.aval, **e.params)
                vals[out] = self.tmp(self.typed(expr, e))
            self.line(f"{self.name(out)} = {vals[out]}")
        for e in g.reductions:  # reducing no axes of a scalar
            self.eqn = e
            v = value(e.inputs[0])
            if e.prim.name in ("argmax", "argmin"):
                v = self.const(0, e.params["index_dtype"])
            self.line(f"{self.name(e.outputs[0])} = {v}")


_IDENTITY = {"sum": 0, "prod": 1, "and": True, "or": False}


def reduction_identity(kind, dtype):
    """The value a reduction of ``kind`` ("sum", "max", "argmin", ...) starts from."""
    d = np.dtype(dtype)
    if d.kind == "c" and kind in ("max", "min"):  # as in JAX: -inf or +inf, imaginary 0
        return complex(-np.inf if kind == "max" else np.inf, 0)
    if kind in ("max", "argmax"):
        return -np.inf if d.kind == "f" else (False if d.kind == "b" else np.iinfo(d).min)
    if kind in ("min", "argmin"):
        return np.inf if d.kind == "f" else (True if d.kind == "b" else np.iinfo(d).max)
    return _IDENTITY[kind]
_KINDS = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
          "reduce_and": "and", "reduce_or": "or", "argmax": "argmax", "argmin": "argmin"}


class _Reduction:
    """Code for one reduction fused into a group's loops, in one of three styles:

    - flat: all axes, one flat loop in blocks (block partials in the input precision, float
      sums of blocks in float64);
    - suffix: the reduced axes are the innermost loops (level L on): a scalar accumulator
      opened before loop L and stored after it;
    - array: other axis sets: an accumulator array over the kept axes.
    """

    def __init__(self, em: Emitter, eqn, rank):
        self.em, self.eqn, self.rank = em, eqn, rank
        self.kind = _KINDS[eqn.prim.name]
        self.is_arg = self.kind in ("argmax", "argmin")
        self.axes = tuple(eqn.params["axes"])
        self.all_axes = set(self.axes) == set(range(rank))
        self.in_dtype = eqn.inputs[0].aval.dtype
        self.out = eqn.outputs[0]
        k = self.in_dtype.kind
        # Float sums/products accumulate in float64; integer ones in 64 bits (the same result
        # modulo 2**bits as wrapping at every step).
        wide = {"f": np.float64, "c": np.complex128, "i": np.int64, "u": np.uint64}
        self.acc_dtype = np.dtype(wide[k]) if k in wide and self.kind in ("sum", "prod") \
            else self.in_dtype
        self.kept = [d for d in range(rank) if d not in self.axes]
        self.level = len(self.kept)
        self.style = "suffix" if self.kept == list(range(self.level)) else "array"
        self.acc, self.part, self.best_i = em.fresh("acc"), em.fresh("part"), em.fresh("bi")

    def identity(self, dtype):
        return self.em.const(reduction_identity(self.kind, dtype), np.dtype(dtype))

    def combine(self, a, b):
        return combine(self.kind, a, b, self.in_dtype.kind)

    def _arg_update(self, v, pos, acc, bi):
        em = self.em
        better = ">" if self.kind == "argmax" else "<"
        t = em.tmp(v)
        # Strictly better wins (ties keep the first); the first NaN wins and stays.
        em.line(f"if {bi} < 0 or ({t} {better} {acc}) or ({t} != {t} and {acc} == {acc}):")
        em.line(f"    {acc} = {t}")
        em.line(f"    {bi} = {pos}")

    def _store(self, where):
        em = self.em
        if self.is_arg:
            val = em.cast(self.best_i, self.eqn.params["index_dtype"])
        else:
            val = em.cast(self.part, self.out.aval.dtype)
        em.line(f"{where} = {val}")

    # -- flat style ---------------------------------------------------------------------------
    def flat_outer_init(self):
        em = self.em
        if self.is_arg:
            em.line(f"{self.acc} = {self.identity(self.in_dtype)}")
            em.line(f"{self.best_i} = -1")
        else:
            em.line(f"{self.acc} = {self.identity(self.acc_dtype)}")

    def flat_block_init(self):
        if not self.is_arg:
            self.em.line(f"{self.part} = {self.identity(self.in_dtype)}")

    def flat_accumulate(self, v, i):
        if self.is_arg:
            self._arg_update(v, i, self.acc, self.best_i)
        else:
            self.em.line(f"{self.part} = {self.combine(self.part, v)}")

    def flat_block_fold(self):
        if not self.is_arg:
            self.em.line(f"{self.acc} = {self.combine(self.acc, self.part)}")

    def flat_finish(self):
        em = self.em
        src, dt = (self.best_i, self.eqn.params["index_dtype"]) if self.is_arg else \
            (self.acc, self.out.aval.dtype)
        em.line(f"{em.name(self.out)} = {em.cast(src, dt)}")

    # -- nested styles ------------------------------------------------------------------------
    def setup(self, dims):
        em = self.em
        kept_dims = [dims[d] for d in self.kept]
        if self.style == "suffix":
            if self.kept:
                em.alloc(self.out, kept_dims)
            return
        shape = ", ".join(kept_dims) + ("," if len(kept_dims) == 1 else "")
        dt = self.in_dtype if self.is_arg else self.acc_dtype
        fills = [(self.acc, dt, self.identity(dt))]
        if self.is_arg:
            fills.append((self.best_i, np.dtype(np.int64), "-1"))
        for name, dtype, fill in fills:
            if em.buffers is not None:  # in a loop: scratch allocated once, before it
                em.line(f"{name} = {em.buffers.alloc(em.fresh('buf'), self.out.aval.shape, dtype)}")
                em.line(f"{name}[:] = {fill}")
            else:
                em.line(f"{name} = np.full(({shape}), {fill}"
                        f"{', dtype=np.int64' if name == self.best_i else ''})")

    def open_level(self, k):
        if self.style != "suffix" or self.level != k:
            return
        em = self.em
        if self.is_arg:
            em.line(f"{self.part} = {self.identity(self.in_dtype)}")
            em.line(f"{self.best_i} = -1")
        else:
            em.line(f"{self.part} = {self.identity(self.acc_dtype)}")

    def accumulate(self, v, idx):
        if self.style == "suffix":
            if self.is_arg:
                self._arg_update(v, idx[self.axes[0]], self.part, self.best_i)
            else:
                self.em.line(f"{self.part} = {self.combine(self.part, v)}")
            return
        key = ", ".join(idx[d] for d in self.kept)
        if self.is_arg:
            self._arg_update(v, idx[self.axes[0]], f"{self.acc}[{key}]",
                             f"{self.best_i}[{key}]")
        else:
            cell = f"{self.acc}[{key}]"
            self.em.line(f"{cell} = {self.combine(cell, v)}")

    def close_level(self, k, outer_idx):
        if self.style != "suffix" or self.level != k:
            return
        where = self.em.name(self.out)
        self._store(f"{where}[{', '.join(outer_idx)}]" if self.kept else where)

    def finish(self):
        if self.style != "array":
            return
        em = self.em
        src = self.best_i if self.is_arg else self.acc
        dt = self.eqn.params["index_dtype"] if self.is_arg else self.out.aval.dtype
        if em.buffers is not None:
            em.line(f"{em.alloc(self.out, [str(d) for d in self.out.aval.shape])}[:] = {src}")
        else:
            em.line(f"{em.name(self.out)} = {src}.astype({dtype_ctor(dt)})")


def _calls_blas(jaxpr) -> bool:
    from .ops import SMALL_GEMM
    for eqn in jaxpr.eqns:
        if eqn.prim.name in ("cholesky", "triangular_solve", "lu"):  # LAPACK: OpenBLAS threads
            return True
        if eqn.prim.name == "dot_general" and eqn.outputs[0].aval.dtype.kind in "fc":
            (lc, _), _ = eqn.params["dimension_numbers"]
            k = int(np.prod([eqn.inputs[0].aval.shape[d] for d in lc]))
            if eqn.outputs[0].aval.size * k > SMALL_GEMM:
                return True
        if any(_calls_blas(j) for j in walk_jaxprs(eqn.params)):
            return True
    return False


def emit_kernel(jaxpr, name="kernel"):
    """Code for ``jaxpr``: ``(constants, function source, uses prange, line_eqns, extra)``.
    The function takes the jaxpr's inputs, its constants, then the ``extra`` arrays that
    nested jaxprs close over; ``line_eqns[k]`` is the equation behind line k of the source
    (for error messages)."""
    em = Emitter()
    # OpenBLAS's threads keep spinning after a matrix product: Numba's prange threads would
    # fight them for the cores, so kernels that call BLAS leave the threading to BLAS.
    em.allow_parallel = not _calls_blas(jaxpr)
    params = []
    for v in list(jaxpr.invars) + list(jaxpr.constvars):
        if v.aval.shape:
            # Typed mutable: functrans buffers are read-only, but values meeting at loop
            # carries and branches must have one Numba type (arrays arrive C-contiguous:
            # Kernel makes them so). A new name, so that the kernel's variables are assigned
            # once (see _single).
            params.append("a" + em.name(v))
            em.line(f"{em.name(v)} = rt.mutable(a{em.name(v)})")
        else:
            params.append(em.name(v))
    em.block(jaxpr, consts_are_params=True)
    outs = [em.atom(x) for x in jaxpr.outvars]  # pack small results at the top level
    em.line(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    params += ["a" + n for n, _ in em.extra_params]
    source = "\n".join([f"def {name}({', '.join(params)}):"] + em.lines) + "\n"
    return ("\n".join(em.const_lines), source, em.parallel, [None] + em.line_eqns,
            [v for _, v in em.extra_params])


__all__ = ["emit_kernel", "Emitter", "LoweringError", "Op", "REDUCTIONS"]
