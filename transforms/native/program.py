"""jit's executable on the native backend: a jaxpr as native drivers, and Numba kernels for
the equations the native backend leaves to it.

The jaxpr's equations are split into maximal runs the native backend compiles
(:func:`native_eqn`) and runs it does not (compiled by the Numba backend, one kernel per
run, as before). A program made of one native run (the common case) is one ctypes call.

    >>> prog = NativeProgram(ft.make_jaxpr(lambda x: fnp.exp(x) + 1.0)(np.zeros(3)), "f")
    >>> prog.compile()
    >>> prog(np.zeros(3))[0].tolist()
    [2.0, 2.0, 2.0]
"""
from __future__ import annotations

import warnings

import numpy as np

from functrans.core.array import Array
from functrans.core.config import config
from functrans.core.ir import Jaxpr, Literal, Var, run_interface, walk_jaxprs
from functrans.core.pytree import unflatten_source
from functrans.transforms.lowering.compile import parallel_regions
from functrans.transforms.lowering.plan import REDUCTIONS, is_index_map, is_pointwise
from functrans.transforms.lowering.scalar import scalar_rules

from .blocks import CONTROL
from .driver import (_NO_ARENA, Driver, Unsupported, _give_arena, _hot_arenas,
                     _retake_arena, _take_arena, program_calls_blas)
from .user_calls import FAILED
from .ops import supported as op_supported

__all__ = ["NativeProgram", "native_eqn"]


def _dtypes_ok(eqn) -> bool:
    for v in list(eqn.inputs) + list(eqn.outputs):
        d = np.dtype(v.aval.dtype)
        if d.kind == "c" or (d.kind == "f" and d.itemsize == 2) or d.kind not in "biuf":
            return False
    return True


def native_eqn(eqn) -> bool:
    """Whether the native backend compiles ``eqn``."""
    if eqn.prim.name == "numba_call":  # pointers and sizes: any dtype Numba takes
        return op_supported(eqn)
    if not _dtypes_ok(eqn):
        return False
    name = eqn.prim.name
    if name in CONTROL:
        return all(native_eqn(e) for j in walk_jaxprs(eqn.params) for e in j.eqns)
    if len(eqn.outputs) == 1 and (is_pointwise(eqn) or is_index_map(eqn)):
        return name in scalar_rules or is_index_map(eqn)
    if name in REDUCTIONS:
        return True
    return op_supported(eqn)


_LITERAL, _COPY, _OWN = "literal", "copy", "own"


def _output_plan(jaxpr) -> list:
    """Per output, ``(kind, var, dtype, weak)``: a literal, an input or constant (copied, so
    no caller gets an argument's buffer), or a value the program computed. Decided once per
    program, so a call does no membership tests."""
    passed = set(map(id, jaxpr.invars)) | set(map(id, jaxpr.constvars))
    plan = []
    for v in jaxpr.outvars:
        kind = _LITERAL if isinstance(v, Literal) else _COPY if id(v) in passed else _OWN
        plan.append((kind, v, v.aval.dtype, v.aval.weak_type))
    return plan


def _settle(x: Array) -> np.ndarray:
    """``x``'s value made C-contiguous, kept as its value from now on: an Array is immutable,
    so the copy stands for it (``fnp.zeros`` gives a broadcast view, with no memory behind
    it, and a jitted step taking it would otherwise copy it at every call: 90 us for 1.6 MB)."""
    v = np.ascontiguousarray(x._value)
    v.setflags(write=False)
    x._value = v
    return v


def _arg(x, dtype):
    """A C-contiguous ndarray of ``dtype`` (0-d for scalars) for a driver input."""
    if type(x) is Array:
        v = x._value
        if v.dtype is dtype or v.dtype == dtype:  # (the common case: one test of each)
            return v if v.flags.c_contiguous else _settle(x)
    else:
        v = np.asarray(x)
    if v.dtype != dtype:
        v = v.astype(dtype)
    if not v.flags.c_contiguous:
        v = np.ascontiguousarray(v)
    return v


class _Foreign:
    """A run of equations compiled by the Numba backend."""

    def __init__(self, eqns, ins, outs, name):
        from functrans.transforms.lowering.compile import Kernel
        self.ins, self.outs = ins, outs
        self.kernel = Kernel(Jaxpr([], [], ins, outs, list(eqns)), name)

    def compile(self):
        self.kernel.compile_ahead()

    def run(self, vals):
        return [o._value for o in self.kernel(*vals)]


class _HostConvs:
    """A run of convolutions computed from the host with compiled helpers, nothing to
    compile (``lowering/conv_host.py``)."""

    def __init__(self, eqns, ins, outs):
        from functrans.transforms.lowering.conv_host import HostConv
        self.ins, self.outs = ins, outs
        self.steps = [(HostConv(e), e.inputs, e.outputs[0]) for e in eqns]
        self.text = "# host: " + ", ".join(str(e.outputs[0]) + " = conv_general_dilated"
                                           for e in eqns)

    def compile(self):
        pass

    def run(self, vals):
        env = dict(zip(self.ins, vals))
        for conv, inputs, out in self.steps:
            env[out] = conv(*(env[x] if isinstance(x, Var) else x.val for x in inputs))
        return [env[v] for v in self.outs]


def _kind(eqn, foreign) -> str:
    from functrans.transforms.lowering.conv_host import host_strategy
    if host_strategy(eqn) is not None:
        return "host"
    return "native" if native_eqn(eqn) and id(eqn) not in foreign else "foreign"


class NativeProgram:
    """Runs ``jaxpr`` with native drivers (and Numba kernels where needed)."""

    def __init__(self, jaxpr, name):
        self.jaxpr = jaxpr
        self.name = name
        self.in_dtypes = [np.dtype(v.aval.dtype) for v in jaxpr.invars]
        self.consts = [_arg(c, v.aval.dtype) for v, c in zip(jaxpr.constvars, jaxpr.consts)]
        self.calls_blas = program_calls_blas(jaxpr)
        foreign: set = set()
        for _ in range(len(jaxpr.eqns) + 1):
            try:
                self._split(foreign)
                break
            except Unsupported as e:  # retry with those equations left to Numba
                foreign.update(id(eqn) for eqn in e.eqns)
        self.single = self.runs[0] if len(self.runs) == 1 and \
            isinstance(self.runs[0], Driver) else None
        # The driver's outputs are the program's, each once (in the driver's order, which
        # may differ): wrap them as they are, in the program's order.
        self.out_order = None
        if self.single is not None:
            pos = {v: i for i, v in enumerate(self.single.outs)}
            outvars = jaxpr.outvars
            if len(outvars) == len(pos) and len(set(map(id, outvars))) == len(outvars) \
                    and all(isinstance(v, Var) and v in pos for v in outvars):
                self.out_order = [pos[v] for v in outvars]
        self.plain_outputs = self.out_order is not None
        self.out_weak = [v.aval.weak_type for v in jaxpr.outvars]
        self._out_plan = _output_plan(jaxpr)

    def _split(self, foreign):
        jaxpr, name = self.jaxpr, self.name
        runs, current, kind = [], [], None
        for eqn in jaxpr.eqns:
            k = _kind(eqn, foreign)
            if current and k != kind:
                runs.append((kind, current))
                current = []
            current.append(eqn)
            kind = k
        if current:
            runs.append((kind, current))
        # Values each run must hand on: read by a later run or returned.
        needed = {x for x in jaxpr.outvars if isinstance(x, Var)}
        self.runs = []
        for kind, eqns in reversed(runs):
            ins, outs = run_interface(eqns, needed)
            if kind == "native" and len(runs) == 1:  # the whole program: every input
                ins = list(jaxpr.invars) + list(jaxpr.constvars)
            step = Driver(eqns, ins, outs, name, self.calls_blas) if kind == "native" else \
                _HostConvs(eqns, ins, outs) if kind == "host" else _Foreign(eqns, ins, outs, name)
            self.runs.append(step)
            needed.update(ins)
        self.runs.reverse()

    @property
    def text(self) -> str:
        """The generated code: per run, the driver's LLVM IR and its kernels' (or, for a run
        left to the Numba backend, its kernel module's Python source)."""
        parts = []
        for r in self.runs:
            if isinstance(r, Driver):
                parts += [r.text] + r.kernel_texts()
            elif isinstance(r, _HostConvs):
                parts.append(r.text)
            else:
                parts.append(r.kernel.text)
        return "\n".join(parts)

    @property
    def native_fraction(self) -> float:
        """Share of equations compiled natively (1.0 when no run falls back to Numba)."""
        n = sum(len(r.kernels) for r in self.runs if isinstance(r, Driver))
        total = n + sum(len(r.kernel.jaxpr.eqns) for r in self.runs if isinstance(r, _Foreign))
        return n / total if total else 1.0

    def compile(self) -> None:
        """Compile (or load) every run's code. A run whose generated code LLVM refuses (a
        bug of the native generator, never the user's) is compiled by the Numba backend
        instead, with a warning."""
        for k, r in enumerate(self.runs):
            try:
                r.compile()
            except RuntimeError as e:
                if not isinstance(r, Driver) or config.native_strict:
                    raise
                warnings.warn(f"{e}; jit compiles this part of {self.name!r} with Numba "
                              "instead", RuntimeWarning, stacklevel=2)
                eqns = [e for e in self.jaxpr.eqns if any(o in r.produced for o in e.outputs)]
                self.runs[k] = _Foreign(eqns, r.ins, r.outs, self.name)
                self.runs[k].compile()
        self.single = self.runs[0] if len(self.runs) == 1 and \
            isinstance(self.runs[0], Driver) else None

    def quick_to_compile(self, applications: float) -> bool:
        """Is compiling now better than interpreting the first call (``applications``
        primitive applications) while it compiles? Yes when everything is built already (in
        this process or the disk cache: it loads in milliseconds); when what is left to
        compile would take less than two interpreted calls (interpreting meanwhile shares
        the cores with the compile, so that call would return no sooner than the compiled
        one, and the compiled result would come later: a new batch size of a program that
        ran, a large model whose interpreted step is slow); and when most of the code was
        compiled before and the rest takes under 50 ms. A run left to Numba counts as not built. Estimates,
        measured on a 2-core Xeon: LLVM compiles kernels at about 4 us, drivers (rolled
        loops, mostly calls) at about 1.5 us per character of IR; the interpreter spends
        about 5 us per primitive applied and moves about 1 GB/s through the intermediates
        (fresh memory each)."""
        if not all(isinstance(r, (Driver, _HostConvs)) for r in self.runs):
            return False
        drivers = [r for r in self.runs if isinstance(r, Driver)]
        new = [k for r in drivers for k in r.unbuilt_kernels()]
        kernel_chars = sum(len(k.text()) for k in new)
        driver_chars = sum(len(r.text) for r in self.runs
                           if isinstance(r, Driver) and not r.built())
        if not kernel_chars and not driver_chars:
            return True
        compile_s = 4e-6 * kernel_chars + 1.5e-6 * driver_chars
        data = sum(v.aval.size * np.dtype(v.aval.dtype).itemsize
                   for e in self.jaxpr.eqns for v in e.outputs)
        # Mostly compiled before (a new batch size of a small program): 50 ms is not worth
        # switching tiers for.
        built_before = 2 * len(new) < sum(len(r.kernels) for r in drivers)
        return compile_s < max(0.05 if built_before else 0.0,
                               2 * (5e-6 * applications + data / 1e9))

    @property
    def checked(self) -> bool:
        """Whether every run's code is compiled (as :attr:`Kernel.checked`)."""
        return all(r.entry is not None if isinstance(r, Driver) else
                   isinstance(r, _HostConvs) or r.kernel.checked for r in self.runs)

    def compile_ahead(self) -> None:
        self.compile()

    def __call__(self, *args):
        single = self.single
        if single is not None:
            ins = [_arg(x, dt) for x, dt in zip(args, self.in_dtypes)] + self.consts
            outs = single.run(ins)
            if self.plain_outputs:
                return [Array._wrap(outs[i], w) for i, w in zip(self.out_order, self.out_weak)]
            env = dict(zip(single.outs, outs))
            env.update(zip(self.jaxpr.invars, ins))
            env.update(zip(self.jaxpr.constvars, self.consts))
            return self._results(env)
        env = {}
        for v, x, dt in zip(self.jaxpr.invars, args, self.in_dtypes):
            env[v] = _arg(x, dt)
        env.update(zip(self.jaxpr.constvars, self.consts))
        for r in self.runs:
            vals = [env[v] for v in r.ins]
            env.update(zip(r.outs, r.run(vals)))
        return self._results(env)

    def fast_caller(self, leaves, out_tree=None):
        """``call(leaves) -> [Array, ...]`` for jit's fast path, specialized to the kinds of
        ``leaves`` (each call's leaves have the same kinds and types), or None where the
        general call is needed (programs of several runs, or not compiled yet). With
        ``out_tree``, the caller returns the outputs in that structure (None where it has
        nodes other than Python's containers). The caller is Python source generated for this
        signature: no loops, no argument lists built at run time, and no calls of Python
        functions for Arrays and Python scalars, which after a program has streamed megabytes
        run with cold caches at about 1 us each. A driver with parallel loops takes the lock of
        ``parallel_regions`` when there is one, as :meth:`Driver.run` does."""
        d = self.single
        if d is None or d.entry is None:
            return None
        ns = {"entry": d.entry, "empty": np.empty, "new": object.__new__, "Array": Array,
              "take": _take_arena, "give": _give_arena, "NO_ARENA": _NO_ARENA,
              "hot": _hot_arenas, "retake": _retake_arena, "regions": parallel_regions}
        args, values = [], []
        for k, (x, v) in enumerate(zip(leaves, self.jaxpr.invars)):
            t = type(x)
            if not v.aval.shape and (t in (float, int, bool) or isinstance(x, np.generic)):
                args.append(f"x{k}")  # ctypes converts scalars itself
            elif t is Array and v.aval.shape:  # its value, C-contiguous
                values += [f"a{k} = x{k}._value", f"if not a{k}.flags.c_contiguous:",
                           f"    a{k} = settle(x{k})"]
                args.append(f"a{k}")
            elif t is Array:
                args.append(f"x{k}._value")
            else:
                ns[f"dt{k}"] = np.dtype(v.aval.dtype)
                args.append(f"arg(x{k}, dt{k})")
        ns.update(settle=_settle, arg=_arg)
        for k, c in enumerate(self.consts):
            ns[f"p{k}"] = c
        args += [f"p{k}" for k in range(len(self.consts))]
        results, lines, outs = self._fast_results(d, list(args), ns)
        lines = values + lines
        for k, c in enumerate(d.consts):
            ns[f"c{k}"] = c
        if d.user_kernels:  # the inputs are kept, to report a kernel that failed
            lines.append(f"ins = ({''.join(a + ', ' for a in args)})")
            args = ["*ins"]
            ns.update(FAILED=FAILED, driver=d)
        call_args = ", ".join(args + outs + [f"c{k}" for k in range(len(d.consts))])
        if d.arena_size:  # the arena given back last, else the pool's (_take_arena inline)
            size = d.arena_size
            run = ["try:", "    arena = hot.pop()", "except IndexError:",
                   f"    arena = take({size})", "else:", f"    if arena.size < {size}:",
                   f"        arena = retake(arena, {size})",
                   "try:", f"    entry({call_args}, arena)", "finally:",
                   "    if hot:", "        give(arena)", "    else:", "        hot.append(arena)"]
        else:
            run = [f"entry({call_args}, NO_ARENA)"]
        if d.parallel:  # (a lock only with Numba's workqueue layer: see ParallelRegions)
            run = ["lock = regions.lock", "if lock is None:", *(f"    {ln}" for ln in run),
                   "else:", "    with lock:", *(f"        {ln}" for ln in run)]
        lines += run
        if d.user_kernels:
            lines += ["if FAILED[0]:", "    driver.report_failure(ins)"]
        for k, (value, weak) in enumerate(zip(results, self.out_weak)):
            lines += [f"v{k} = {value}", f"v{k}.setflags(write=False)", f"r{k} = new(Array)",
                      f"r{k}._value, r{k}._weak, r{k}._sharding = v{k}, {weak}, None"]
        names = [f"r{k}" for k in range(len(results))]
        if out_tree is None:
            lines.append(f"return [{', '.join(names)}]")
        else:
            tree = unflatten_source(out_tree, names, ns)
            if tree is None:
                return None
            lines.append(f"return {tree}")
        unpack = "".join(f"x{k}, " for k in range(len(leaves)))
        head = f"    {unpack}= leaves\n" if leaves else ""
        src = "def call(leaves):\n" + head + "".join(f"    {ln}\n" for ln in lines)
        exec(compile(src, f"<functrans fast call of {self.name}>", "exec"), ns)
        return ns["call"]

    def _fast_results(self, d, inputs, ns):
        """For :meth:`fast_caller`: ``(results, lines, outs)``, the expression of each output
        in the program's order, as :meth:`_results` gives them (the driver's outputs as they
        are; a literal, an input or constant, or an output returned twice, copied: no caller
        gets a buffer another result or an argument has), the lines allocating the driver's
        outputs, and their names."""
        lines, outs = [], []
        for k, v in enumerate(d.outs):
            ns[f"s{k}"], ns[f"d{k}"] = tuple(v.aval.shape), np.dtype(v.aval.dtype)
            lines.append(f"o{k} = empty(s{k}, d{k})")
            outs.append(f"o{k}")
        pos = {v: i for i, v in enumerate(d.outs)}
        passed = dict(zip(self.jaxpr.invars, inputs))
        passed.update(zip(self.jaxpr.constvars, inputs[len(self.jaxpr.invars):]))
        ns["copy"] = np.array
        results, given = [], set()
        for j, (kind, v, dtype, _) in enumerate(self._out_plan):
            ns[f"t{j}"] = np.dtype(dtype)
            if kind is _LITERAL:
                ns[f"lit{j}"] = v.val
                results.append(f"copy(lit{j}, t{j})")
            elif kind is _COPY:
                results.append(f"copy({passed[v]}, t{j})")
            elif pos[v] in given:
                results.append(f"copy(o{pos[v]}, t{j})")
            else:
                given.add(pos[v])
                results.append(f"o{pos[v]}")
        return results, lines, outs

    def _results(self, env):
        results = []
        owned = set()
        for kind, v, dtype, weak in self._out_plan:
            if kind is _LITERAL:
                o = np.full((), v.val, dtype=dtype)
            else:
                o = env[v]
                if kind is _COPY or id(o) in owned:
                    o = np.array(o, dtype=dtype)  # never hand out an input's buffer
                owned.add(id(o))
            results.append(Array._wrap(o, weak))
        return results
