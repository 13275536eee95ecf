"""The body of a native driver: a jaxpr's planned steps as kernel calls, and control flow
(``cond``, ``while``, ``scan``) as LLVM branches and loops around the kernel calls of its
branch and body programs.

Every value lives in memory: a location is a pointer. Buffers of at most ``SMALL_BYTES``
are stack slots of the driver (with the small kernels inlined, LLVM keeps them in
registers); larger ones are offsets in one arena, planned while the code is emitted: a
buffer is reused once every value in it is dead. Branch and loop bodies plan their
buffers from the same arena, so a loop's body reuses its buffers at every iteration.

Loop carries: small ones are copied from a spare slot at the end of each iteration (fixed
addresses keep them in registers); large ones are double-buffered (the body writes the new
value into the spare buffer while it may still read the old one, then the two pointers
swap); a carry the body returns unchanged needs neither, and one the body only updates
(``dynamic_update_slice``, ``scatter``) is updated in place. Stacked ``scan`` inputs and
outputs are read and written as rows of their arrays, without copies.
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Literal, Var
from functrans.transforms.lowering import blas_library
from functrans.transforms.lowering.control import _update_chain as update_chain
from functrans.transforms.lowering.ops import UPDATES
from functrans.transforms.lowering.plan import Group, plan

from . import engine
from .groups import group_kernel
from .ir import Fn, Module, Val, const, mem_type, reg_type
from .kernel import memoized
from .ops import ALIASES, op_kernels
from .scalar import FRAME_ATTRS, cast

__all__ = ["Emitter", "Unsupported", "Region", "module_text", "SMALL_BYTES", "CONTROL",
           "UPDATES"]

ALIGN = 64
SMALL_BYTES = 128
SMALL_ELEMENTS = 16  # kernels whose arrays are all this small are inlined, loops unrolled
REGION_EQNS = 32  # top-level loops and branches this large are functions of their own
LOOP_INLINE_BYTES = 1 << 14
CONTROL = ("cond", "while", "scan")


def module_text(fn, mod, inlined, prefix: str):
    """``(symbol, text)`` of a module defining ``fn`` (named by a hash of the text) and the
    kernels inlined into it."""
    body = mod.text([fn])
    for k, (sym, kernel) in enumerate(inlined.items()):
        # Kernels on tiny arrays ask for their loops to be unrolled (the module is compiled
        # with rolled loops otherwise); ids 1000 apart keep each function's metadata apart.
        unroll = 1000 * (k + 1) if kernel.small else None
        body += kernel.fn.text(unroll).replace(
            "define void @KERNEL(", f"define internal void @{sym}(", 1).replace(
            ") nounwind", ") alwaysinline nounwind", 1)
    symbol = engine.symbol_for(prefix, body + "\0" + "\0".join(sorted(mod.links)))
    return symbol, body.replace(f"@{fn.name}(", f"@{symbol}(", 1)


class Region:
    """A top-level loop or branch compiled as its own function, in its own module: it
    compiles in parallel with the rest of the program, and is cached (and shared) like a
    kernel. Its parameters are pointers: the arena, its inputs, outputs and constants."""

    def __init__(self, fn, mod, inlined):
        self.mod = mod
        self.symbol, self.text = module_text(fn, mod, inlined, "ftr")
        self.signature = f"declare void @{self.symbol}({', '.join(['ptr'] * len(fn.params))})"


class Unsupported(NotImplementedError):
    """Equations (of the top-level program) the native backend cannot generate: they go to
    the Numba backend."""

    def __init__(self, eqns, reason):
        super().__init__(reason)
        self.eqns = eqns


def nbytes(aval) -> int:
    return max(1, int(np.prod(aval.shape))) * np.dtype(aval.dtype).itemsize


class Arena:
    """First-fit offsets in one block of memory, reused once released."""

    def __init__(self):
        self.free: list = []  # (offset, size), sorted, merged
        self.top = 0

    def alloc(self, size: int) -> int:
        size = -(-size // ALIGN) * ALIGN
        for k, (off, sz) in enumerate(self.free):
            if sz >= size:
                if sz == size:
                    del self.free[k]
                else:
                    self.free[k] = (off + size, sz - size)
                return off
        off, self.top = self.top, self.top + size
        return off

    def release(self, off: int, size: int) -> None:
        size = -(-size // ALIGN) * ALIGN
        merged = []
        for o, s in sorted(self.free + [(off, size)]):
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged


class _BlockState:
    """Locations and liveness of one block being emitted."""

    def __init__(self, nsteps, last, want, writable):
        self.loc: dict = {}  # Var -> pointer operand
        self.root: dict = {}  # Var -> Var whose buffer it shares (aliases, in-place updates)
        self.owned: dict = {}  # root -> [arena (offset, size)] allocated by this block
        self.until: dict = {}  # root -> last step reading any value in its buffer
        self.last = last  # Var -> last step reading it (outputs: nsteps)
        self.want = want  # output Var -> the caller's destination for it
        self.writable = writable  # inputs whose buffers this block may update in place
        self.end = nsteps

    def find(self, v):
        while v in self.root:
            v = self.root[v]
        return v


class Emitter:
    """Emits one driver function (``fn`` in module ``mod``)."""

    def __init__(self, fn, mod, arena_ptr: str, param_data):
        self.fn, self.mod = fn, mod
        self.arena_ptr = arena_ptr
        self.param_data = param_data  # argument name -> its data pointer (prologue code)
        self.arena = Arena()
        self.kernels: dict = {}  # symbol -> Kernel compiled on its own
        self.inlined: dict = {}  # symbol -> Kernel defined in the driver module
        self.consts: list = []  # arrays of nested programs, passed as extra arguments
        self.const_params: list = []
        self.allow_parallel = False  # may loops run on Numba's thread pool?
        self.depth = 0  # loops around the code being emitted
        self.regions: list = []  # Regions, compiled before the driver
        self.in_region = False

    # -- buffers ----------------------------------------------------------------------------------
    def _alloc(self, aval, st: _BlockState, owner) -> str:
        size = nbytes(aval)
        if size <= SMALL_BYTES:
            return self.fn.alloca(f"[{size} x i8]", align=16)
        off = self.arena.alloc(size)
        st.owned.setdefault(owner, []).append((off, size))
        return self.fn.prologue(f"getelementptr inbounds i8, ptr {self.arena_ptr}, i64 {off}",
                                "m")

    def _release(self, st: _BlockState, root) -> None:
        for off, size in st.owned.pop(root, ()):
            self.arena.release(off, size)

    def literal_loc(self, x) -> str:
        """A stack slot holding Literal ``x``."""
        slot = self.fn.alloca(mem_type(x.aval.dtype), align=16)
        if np.dtype(x.aval.dtype).kind == "b":
            self.fn.allocas.append(f"  store i8 {1 if x.val else 0}, ptr {slot}")
        else:
            self.fn.allocas.append(f"  store {const(x.val, x.aval.dtype)}, ptr {slot}")
        return slot

    def const_loc(self, value, aval) -> str:
        """Where a nested program's constant lives: a stack slot (scalars) or an argument."""
        if not aval.shape:
            return self.literal_loc(Literal(np.asarray(value, aval.dtype)[()], aval))
        name = f"%c{len(self.consts)}"
        self.consts.append(np.ascontiguousarray(np.asarray(value, dtype=aval.dtype)))
        self.const_params.append(name)
        return self.param_data(name + ".obj")

    def _load_scalar(self, loc, dtype) -> Val:
        mt = mem_type(dtype)
        v = self.fn.load(mt, loc)
        if np.dtype(dtype).kind == "b":
            return Val("i1", self.fn.op(f"icmp ne i8 {v}, 0"))
        return Val(reg_type(dtype), v)

    def _copy(self, dst, src, aval) -> None:
        self.mod.declare("llvm.memcpy", "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
        self.fn.do(f"call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, i64 {nbytes(aval)}, "
                   "i1 false)")

    def _fill(self, dst, x) -> None:
        """Store Literal ``x`` (rank 0) at ``dst``."""
        if np.dtype(x.aval.dtype).kind == "b":
            self.fn.do(f"store i8 {1 if x.val else 0}, ptr {dst}")
        else:
            self.fn.store(const(x.val, x.aval.dtype), dst)

    # -- blocks -----------------------------------------------------------------------------------
    def block(self, jaxpr, in_locs, dests=None, writable=()) -> list:
        """Emit ``jaxpr`` reading its inputs at ``in_locs``; returns its outputs' locations
        (Literals stay Literals unless they have a destination). ``dests`` (one per output,
        or None) are where the caller wants the outputs; ``writable`` are inputs this block
        may update in place (their buffers belong to the caller's loop and die here)."""
        steps, materialized = plan(jaxpr)
        plans = []
        for step in steps:
            try:
                plans.append(self._plan_step(step, materialized))
            except NotImplementedError as e:
                eqns = step.eqns + step.reductions if isinstance(step, Group) else [step.eqn]
                raise Unsupported(eqns, str(e)) from None
        last: dict = {}
        for t, (_, reads, _) in enumerate(plans):
            for v in reads:
                last[v] = t
        for v in jaxpr.outvars:
            if isinstance(v, Var):
                last[v] = len(steps)
        dests = list(dests) if dests is not None else [None] * len(jaxpr.outvars)
        want: dict = {}
        for v, dest in zip(jaxpr.outvars, dests):
            if isinstance(v, Var) and dest is not None:
                want.setdefault(v, dest)
        st = _BlockState(len(steps), last, want, set(writable))
        for v, loc in zip(jaxpr.invars, in_locs):
            st.loc[v] = loc
            want.pop(v, None)  # an input is never computed into a destination
        for v, c in zip(jaxpr.constvars, jaxpr.consts):
            st.loc[v] = self.const_loc(c, v.aval)
            want.pop(v, None)
        for t, (kind, reads, writes) in enumerate(plans):
            self._emit_step(steps[t], kind, reads, writes, t, st)
            for r in list(st.owned):
                if st.until.get(r, -1) <= t:
                    self._release(st, r)
        outs = []
        kept = set()  # buffers the caller reads after the block: outputs without destination
        for v, dest in zip(jaxpr.outvars, dests):
            if isinstance(v, Literal):
                if dest is not None:
                    self._fill(dest, v)
                outs.append(dest if dest is not None else v)
                continue
            loc = st.loc[v]
            if dest is None:
                kept.add(st.find(v))
            elif dest != loc:
                self._copy(dest, loc, v.aval)
                loc = dest
            outs.append(loc)
        for r in list(st.owned):
            if r not in kept:
                self._release(st, r)
        return outs

    def _plan_step(self, step, materialized):
        """(kind, Vars read, Vars written) of a step; kind: a Kernel, "alias" or "control"."""
        if isinstance(step, Group):
            k = group_kernel(step, materialized, self.allow_parallel)
            eqns = step.eqns + step.reductions
        else:
            eqn = step.eqn
            name = eqn.prim.name
            if name in ALIASES:
                return "alias", [eqn.inputs[0]], [eqn.outputs[0]]
            if name in CONTROL:
                return "control", [x for x in eqn.inputs if isinstance(x, Var)], \
                    list(eqn.outputs)
            # (A batch of products runs on the pool once products are cut: ops.py.)
            k = memoized([eqn], ("op", blas_library.split_products), None,
                         lambda: op_kernels[name](eqn))
            eqns = [eqn]
            k.small = all(v.aval.size <= SMALL_ELEMENTS for v in eqn.inputs + eqn.outputs
                          if isinstance(v, Var))
        produced = {o for e in eqns for o in e.outputs}
        args = [a.value for a in k.args if a.kind in ("buf", "scalar")]
        reads = [v for v in args if isinstance(v, Var) and v not in produced]
        writes = [v for v in args if isinstance(v, Var) and v in produced]
        return k, reads, writes

    def _place(self, v, st: _BlockState) -> str:
        """The location of a new value ``v``: its destination if the caller gave one, else a
        fresh buffer."""
        dest = st.want.pop(v, None)
        loc = dest if dest is not None else self._alloc(v.aval, st, v)
        st.loc[v] = loc
        st.until[v] = max(st.until.get(v, -1), st.last.get(v, -1))
        return loc

    def _share(self, new, old, st: _BlockState) -> None:
        """``new`` lives in ``old``'s buffer."""
        st.loc[new] = st.loc[old]
        r = st.find(old)
        st.root[new] = r
        st.until[r] = max(st.until.get(r, -1), st.last.get(new, -1))

    def _emit_step(self, step, kind, reads, writes, t, st: _BlockState):
        if kind == "alias":
            self._share(writes[0], reads[0], st)
            return
        if kind == "control":
            try:
                if not self.in_region and self.depth == 0 and \
                        _size(step.eqn) >= REGION_EQNS:
                    self._region(step.eqn, st)
                else:
                    getattr(self, "_" + step.eqn.prim.name)(step.eqn, st)
            except Unsupported as e:  # in a branch or body: the whole construct goes
                raise Unsupported([step.eqn], str(e)) from None
            return
        if not isinstance(step, Group) and step.eqn.prim.name in UPDATES:
            self._maybe_in_place(step.eqn, st, t)
        for v in writes:
            if v not in st.loc:
                self._place(v, st)
        self._call(kind, st)

    def _maybe_in_place(self, eqn, st, t) -> None:
        """An update whose operand dies here writes into the operand's buffer."""
        x, out = eqn.inputs[0], eqn.outputs[0]
        if not isinstance(x, Var) or out in st.want:
            return
        r = st.find(x)
        dies = st.last.get(x, -1) == t and st.until.get(r, t) <= t
        if dies and (r in st.owned or r in st.writable):
            self._share(out, x, st)

    def _call(self, k, st: _BlockState) -> None:
        sym = k.symbol()
        # Inlined: kernels on tiny arrays (their sizes become constants), and kernels in loop
        # bodies on arrays that fit in the cache, where a call per step per kernel adds up.
        inline = k.small or (self.depth > 0 and not k.parallel and all(
            nbytes(a.value.aval) <= LOOP_INLINE_BYTES for a in k.args if a.kind == "buf"))
        args, lent = [], []
        for a in k.args:
            if a.kind == "buf":
                args.append(f"ptr {st.loc[a.value]}")
            elif a.kind == "scalar":
                args.append(str(self._load_scalar(st.loc[a.value], a.value.aval.dtype)))
            elif a.kind == "scratch":
                if a.value <= SMALL_BYTES:
                    args.append(f"ptr {self.fn.alloca(f'[{a.value} x i8]', align=16)}")
                else:
                    off = self.arena.alloc(a.value)
                    lent.append((off, a.value))
                    args.append("ptr " + self.fn.prologue(
                        f"getelementptr inbounds i8, ptr {self.arena_ptr}, i64 {off}", "m"))
            else:
                args.append(f"i64 {a.value}")
        for off, size in lent:  # scratch is free again once the call returns
            self.arena.release(off, size)
        if inline:  # its own name: the same kernel may also be called, not inlined
            sym = "fti_" + sym[len("ftk_"):]
            self.inlined[sym] = k
            self.mod.decls.update(k.mod.decls)
            self.mod.links.update(k.mod.links)
        else:
            self.kernels[sym] = k
            self.mod.declare(sym, k.signature())
        self.fn.do(f"call void @{sym}({', '.join(args)})")

    def _region(self, eqn, st):
        """Emit control-flow equation ``eqn`` as a function of its own, called here."""
        outs = [self._place(v, st) for v in eqn.outputs]
        ins = [self._in_loc(x, st) for x in eqn.inputs]
        fn, mod = Fn("REGION", [], attrs=f"nounwind {FRAME_ATTRS}"), Module()
        outer_args, mapping = [], {}

        def param(outer):  # the region's parameter receiving an outer pointer
            if outer not in mapping:
                mapping[outer] = f"%r{len(outer_args)}"
                outer_args.append(outer)
                fn.params.append(("ptr", mapping[outer]))
            return mapping[outer]
        saved = (self.fn, self.mod, self.arena_ptr, self.inlined, self.param_data)
        outer_data = self.param_data
        self.fn, self.mod, self.inlined = fn, mod, {}
        self.arena_ptr = param(saved[2])
        self.param_data = lambda name: param(outer_data(name))
        self.in_region = True
        try:
            inner = _BlockState(1, {v: 1 for v in eqn.outputs},
                                {v: param(loc) for v, loc in zip(eqn.outputs, outs)}, set())
            for x, loc in zip(eqn.inputs, ins):
                if isinstance(x, Var):
                    inner.loc[x] = param(loc)
            getattr(self, "_" + eqn.prim.name)(eqn, inner)
            for v, loc in zip(eqn.outputs, outs):  # where the loop left them, if elsewhere
                if inner.loc[v] != mapping[loc]:
                    self._copy(mapping[loc], inner.loc[v], v.aval)
            for r in list(inner.owned):
                self._release(inner, r)
            fn.ret()
            region = Region(fn, mod, self.inlined)
        finally:
            self.fn, self.mod, self.arena_ptr, self.inlined, self.param_data = saved
            self.in_region = False
        self.regions.append(region)
        self.mod.declare(region.symbol, region.signature)
        self.fn.do(f"call void @{region.symbol}({', '.join(f'ptr {a}' for a in outer_args)})")

    def _in_loc(self, x, st) -> str:
        return self.literal_loc(x) if isinstance(x, Literal) else st.loc[x]

    # -- control flow -------------------------------------------------------------------------------
    def _cond(self, eqn, st):
        fn = self.fn
        index, *ops = eqn.inputs
        branches = eqn.params["branches"]
        outs = [self._place(v, st) for v in eqn.outputs]
        in_locs = [self._in_loc(x, st) for x in ops]
        top = len(branches) - 1
        if isinstance(index, Literal):
            i = str(min(max(int(index.val), 0), top))
        else:
            v = self._load_scalar(st.loc[index], index.aval.dtype)
            i = cast(fn, v, index.aval.dtype, np.int64).ref
            i = fn.op(f"select i1 {fn.op(f'icmp slt i64 {i}, 0')}, i64 0, i64 {i}")
            i = fn.op(f"select i1 {fn.op(f'icmp sgt i64 {i}, {top}')}, i64 {top}, i64 {i}")
        done = fn.label("cj")
        labels = [fn.label("cb") for _ in branches]
        cases = " ".join(f"i64 {k}, label %{lab}" for k, lab in enumerate(labels))
        fn.do(f"switch i64 {i}, label %{labels[-1]} [ {cases} ]")
        for branch, lab in zip(branches, labels):
            fn.place(lab)
            self.block(branch, in_locs, dests=outs)
            fn.br(done)
        fn.place(done)

    def _carries(self, st, body, invars, outvars, results, inits):
        """Set up a loop's carries: per carry (mode, where it is, its spare)."""
        fn = self.fn
        producer = {o: e for e in body.eqns for o in e.outputs}
        uses: dict = {}
        for x in [x for e in body.eqns for x in e.inputs] + list(body.outvars):
            uses[x] = uses.get(x, 0) + 1
        items = []
        for c, o, res, init in zip(invars, outvars, results, inits):
            if nbytes(res.aval) <= SMALL_BYTES:
                # In the driver's own stack slots (a destination elsewhere gets a copy after
                # the loop): LLVM keeps them in registers across iterations.
                cur = st.loc[res] = self._alloc(res.aval, st, res)
                st.until[res] = st.last.get(res, -1)
            else:
                cur = self._place(res, st)
            if isinstance(init, Literal):
                self._fill(cur, init)
            elif st.loc[init] != cur:
                self._copy(cur, st.loc[init], res.aval)
            if o is c:
                items.append(("same", cur, None))
            elif _update_chain(o, c, producer, uses):
                items.append(("inplace", cur, None))
            elif nbytes(res.aval) <= SMALL_BYTES:
                items.append(("copy", cur, self._alloc(res.aval, st, res)))
            else:
                spare = self._alloc(res.aval, st, res)
                cs, ss = fn.alloca("ptr"), fn.alloca("ptr")
                fn.do(f"store ptr {cur}, ptr {cs}")
                fn.do(f"store ptr {spare}, ptr {ss}")
                items.append(("swap", cs, ss))
        return items

    def _current(self, items) -> list:
        return [self.fn.load("ptr", cur) if mode == "swap" else cur for mode, cur, _ in items]

    def _dests(self, items) -> list:
        out = []
        for mode, cur, spare in items:
            out.append(None if mode == "same" else cur if mode == "inplace" else
                       spare if mode == "copy" else self.fn.load("ptr", spare))
        return out

    def _advance(self, items, results) -> None:
        fn = self.fn
        for (mode, cur, spare), res in zip(items, results):
            if mode == "copy":
                self._copy(cur, spare, res.aval)
            elif mode == "swap":
                a, b = fn.load("ptr", cur), fn.load("ptr", spare)
                fn.do(f"store ptr {b}, ptr {cur}")
                fn.do(f"store ptr {a}, ptr {spare}")

    @staticmethod
    def _in_place_inputs(items, invars) -> list:
        return [c for (mode, _, _), c in zip(items, invars) if mode == "inplace"]

    def _while(self, eqn, st):
        fn, p = self.fn, eqn.params
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        body = p["body_jaxpr"]
        cconsts = [self._in_loc(x, st) for x in eqn.inputs[:cn]]
        bconsts = [self._in_loc(x, st) for x in eqn.inputs[cn:cn + bn]]
        items = self._carries(st, body, body.invars[bn:], body.outvars, eqn.outputs,
                              eqn.inputs[cn + bn:])
        head, loop, done = fn.label("wh"), fn.label("wb"), fn.label("wx")
        fn.br(head)
        fn.place(head)
        cur = self._current(items)
        self.depth += 1
        (pred,) = self.block(p["cond_jaxpr"], cconsts + cur)
        self.depth -= 1
        if isinstance(pred, Literal):
            c = "true" if pred.val else "false"
        else:
            c = self._load_scalar(pred, np.bool_).ref
        fn.cbr(c, loop, done)
        fn.place(loop)
        self.depth += 1
        self.block(body, bconsts + cur, dests=self._dests(items),
                   writable=self._in_place_inputs(items, body.invars[bn:]))
        self.depth -= 1
        self._advance(items, eqn.outputs)
        fn.br(head)
        fn.place(done)
        for v, loc in zip(eqn.outputs, self._current(items)):
            st.loc[v] = loc

    def _scan(self, eqn, st):
        fn, p = self.fn, eqn.params
        nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
        body = p["jaxpr"]
        consts = [self._in_loc(x, st) for x in eqn.inputs[:nc]]
        items = self._carries(st, body, body.invars[nc:nc + nk], body.outvars[:nk],
                              eqn.outputs[:nk], eqn.inputs[nc:nc + nk])
        xs = [(self._in_loc(x, st), x) for x in eqn.inputs[nc + nk:]]
        ys = [(self._place(v, st), v) for v in eqn.outputs[nk:]]
        with fn.loop(str(length), hint="s") as step:
            i = fn.op(f"sub i64 {length - 1}, {step}") if p["reverse"] else step

            def row(loc, var):
                size = nbytes(var.aval) // var.aval.shape[0] if var.aval.shape[0] else 0
                return fn.gep("i8", loc, fn.op(f"mul i64 {i}, {size}"))
            cur = self._current(items)
            x_rows = [row(loc, var) for loc, var in xs]
            y_rows = [row(loc, var) for loc, var in ys]
            self.depth += 1
            self.block(body, consts + cur + x_rows, dests=self._dests(items) + y_rows,
                       writable=self._in_place_inputs(items, body.invars[nc:nc + nk]))
            self.depth -= 1
            self._advance(items, eqn.outputs[:nk])
        for v, loc in zip(eqn.outputs[:nk], self._current(items)):
            st.loc[v] = loc


def _size(eqn) -> int:
    """Equations in the programs nested in ``eqn``, recursively."""
    from functrans.core.ir import walk_jaxprs
    return sum(len(j.eqns) + sum(_size(e) for e in j.eqns) for j in walk_jaxprs(eqn.params))


def _update_chain(o, c, producer, uses) -> bool:
    """Is ``o`` computed from carry ``c`` by updates only (each the sole reader of the value
    before it, ``c`` included)? Then the carry can be updated in place."""
    return update_chain(o, c, producer, uses, {}) is not None
