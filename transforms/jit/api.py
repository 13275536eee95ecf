"""``jit``: trace once per argument signature, compile, cache, and dispatch quickly.

The cache key is (argument structure, abstract values, static arguments, config flags, named
axes in scope, backend). Under evaluation a hit calls the compiled executable directly; inside another
transformation the ``jit`` primitive is bound so that transformation applies::

    >>> f = ft.jit(lambda x, n: x * n, static_argnums=1)
    >>> f(fnp.arange(3.0), 2)
    Array([0., 2., 4.], dtype=float64)
"""
from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict

import numpy as np

from functrans.core.api_util import (ForeignRef, RefArgument, abstractify, fun_name,
                                     merge_static, split_static, static_argnums_from_names)
from functrans.core.axis_env import _env as _axis_env
from functrans.core import compiler
from functrans.core.config import config
from functrans.core.devices import Device, check_backend, get_backend
from functrans.core.eval import eval_jaxpr
from functrans.core.hivalues import hi_jaxpr, staged_hi_calls
from functrans.core.mesh import SingleDeviceSharding
from functrans.core.traced_arguments import argument_sharding, tracing_arguments
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import EVAL_TRACE, _state, get_aval
from functrans.core.array import Array
from functrans.core.pytree import plain_namedtuple
from functrans.core.tree import tree_flatten, tree_unflatten

from .aot import Compiled, Lowered, Traced
from .call import jit_p
from .debug_nans import checked_call
from .donation import donation, warn_unusable_donations
from .executable import executable_for  # noqa: F401  (importing it registers the CPU backend)
from .fast_path import runner as fast_runner
from .guard import GUARD_AFTER_HITS, GUARD_MAX_BUILDS, MISS, SCALAR_TYPES, guarded_call
from .refs import call_with_closed_refs, call_with_refs, closed_over
from .shardings import check_shardings, place, shard_map_result_shardings
from ..partition.partitioner import mesh_and_specs, partitioned
from .tiered import Tiered


class _Entry:
    __slots__ = ("jaxpr", "out_tree", "consts", "executable", "result_shardings", "hi",
                 "key_tree_type")

    def __init__(self, jaxpr, out_tree, consts):
        self.jaxpr, self.out_tree, self.consts = jaxpr, out_tree, consts
        self.executable = None
        self.key_tree_type = None  # the type of the PyTreeDef in the key it is cached under
        self.result_shardings = shard_map_result_shardings(jaxpr)
        self.hi = False  # high-level values or primitives in it: shown by hi_jaxpr


class Jitted:
    """A jit-compiled function (what ``jit(f)`` returns)."""

    def __init__(self, fun, static_argnums, static_argnames, backend=None, device=None,
                 donate_argnums=None, donate_argnames=None, inline=False):
        functools.update_wrapper(self, fun)
        self._backend = backend if device is None or backend is not None else device.platform
        self.device = device
        self.fun = fun
        self.name = fun_name(fun)
        self.inline = bool(inline)
        self.static_argnums, self.static_argnames = static_argnums_from_names(
            fun, static_argnums, static_argnames)
        self.donate_argnums, self.donate_argnames = donation(
            fun, donate_argnums, donate_argnames, self.static_argnums, self.static_argnames)
        self._cache: OrderedDict = OrderedDict()
        self._fast: dict = {}  # simple signatures -> runner (see __call__)
        self._guard = None  # a hot signature's runner, behind a check of it (guard.py)
        self._lookups = 0  # calls run from self._fast since the guard was built
        self._guards_built = 0
        self._fast_trees: dict = {}  # other pytrees, static arguments -> (runner, tree type)
        self._plain = not self.static_argnums and not self.static_argnames
        self._lock = threading.RLock()

    @property
    def backend(self):
        """The backend compiling this function now (None: ``config.default_backend``)."""
        return get_backend(self._backend)

    def __get__(self, obj, objtype=None):  # methods: bind like a function would
        return self if obj is None else functools.partial(self, obj)

    @property
    def __signature__(self):
        # The wrapped function's, as for JAX's jitted functions (`__get__` would otherwise
        # make `inspect` take this object for a builtin method descriptor).
        return inspect.signature(self.fun)

    def __call__(self, *args, **kwargs):
        # Hot path: array/scalar leaves in plain containers, evaluated eagerly, seen before;
        # then leaves in any pytree (modules' registered nodes), with static arguments.
        if _state.trace is EVAL_TRACE and not config.disable_jit:
            guard = self._guard  # a hot signature's, checked in place (guard.py)
            if guard is not None:
                out = guard(args, kwargs)
                if out is not MISS:
                    return out
            fast = _fast_signature(args, kwargs) if self._plain else None
            if fast is not None:
                runner = self._fast.get(fast[0])
                if runner is not None:
                    self._lookups += 1
                    if self._lookups == GUARD_AFTER_HITS:  # a hot signature: guard it
                        self._build_guard(args, kwargs, runner)
                    return runner(fast[1])
            elif self._fast_trees:  # (runners are kept there only for other signatures)
                sig = self._tree_signature(args, kwargs)
                if sig is not None:
                    try:
                        hit = self._fast_trees.get(sig[0])
                    except TypeError:  # an unhashable static argument: the general path says so
                        hit = None
                    if hit is not None:
                        if hit[1] is not type(sig[0][0]):
                            self._retree(sig[0], hit[0])
                        return hit[0](sig[1])
        if config.disable_jit:
            return self.fun(*args, **kwargs)
        if "_closed_refs" in self.__dict__ and _state.trace is EVAL_TRACE:
            return call_with_closed_refs(self, args, kwargs)
        try:
            entry, leaves = self._entry(args, kwargs)
        except RefArgument:
            return call_with_refs(self, args, kwargs)
        except ForeignRef as e:
            if not closed_over(self, e):
                raise
            self._plain = False  # (the fast paths would skip the references)
            self._fast.clear()
            self._guard = None
            self._fast_trees.clear()
            return call_with_closed_refs(self, args, kwargs, e.ref)
        sharded = None
        if _state.trace is EVAL_TRACE and not entry.consts:
            sharded = mesh_and_specs(entry.jaxpr, leaves)
        if sharded is not None:  # arguments on a mesh: one program per shard
            executable = partitioned(entry.jaxpr, *sharded, self.name)
            outs = executable(*leaves)
            if self._plain and len(self._fast) < config.jit_cache_size:
                fast = _fast_signature(args, kwargs)
                if fast is not None and len(fast[1]) == len(leaves):
                    self._fast[fast[0]] = fast_runner(executable, entry.out_tree, None, fast[1])
        elif _state.trace is EVAL_TRACE and not entry.consts:
            executable = entry.executable
            if executable is None:
                executable = entry.executable = compiler.backend_compile_and_load(
                    self.backend, entry.jaxpr, self.name)
                if self.donate_argnums or self.donate_argnames:
                    warn_unusable_donations(self, args, kwargs, entry.jaxpr.out_avals)
            if type(executable) is Tiered:
                settled = executable.settled()
                if settled is not None:  # compiled (or failed): no more tiers to check
                    executable = entry.executable = settled
            if config.debug_nans:
                outs = checked_call(executable, entry.jaxpr, leaves, self.name)
            else:
                outs = executable(*leaves)
                # While a tiered kernel compiles, calls take this path, so that the fast one
                # runs the kernel itself (not the tiered wrapper) once it is there.
                if type(executable) is not Tiered and entry.result_shardings is None:
                    self._keep_runner(args, kwargs, executable, entry.out_tree, len(leaves))
            if self.device is not None:
                outs = [o._with_sharding(SingleDeviceSharding(self.device)) for o in outs]
            elif entry.result_shardings is not None:  # shard_map's results keep its specs
                outs = [o if s is None or type(o) is not Array else o._with_sharding(s)
                        for o, s in zip(outs, entry.result_shardings)]
        elif self.inline and _state.trace is not EVAL_TRACE:
            outs = eval_jaxpr(entry.jaxpr, *entry.consts, *leaves)
        else:
            outs = jit_p.bind_all(*entry.consts, *leaves, jaxpr=entry.jaxpr, name=self.name)
        return tree_unflatten(entry.out_tree, outs)

    def _keep_runner(self, args, kwargs, executable, out_tree, count) -> None:
        """Keep a fast-path runner of ``executable`` for these arguments' signature."""
        fast = _fast_signature(args, kwargs) if self._plain else None
        if fast is not None:
            if len(fast[1]) == count and len(self._fast) < config.jit_cache_size:
                self._fast[fast[0]] = fast_runner(executable, out_tree, self.device, fast[1])
            return
        if "_closed_refs" in self.__dict__ or len(self._fast_trees) >= config.jit_cache_size:
            return
        sig = self._tree_signature(args, kwargs)
        if sig is not None and len(sig[1]) == count:
            try:
                self._fast_trees[sig[0]] = (
                    fast_runner(executable, out_tree, self.device, sig[1]), type(sig[0][0]))
            except TypeError:  # unhashable static arguments (the general path reported them)
                pass

    def _build_guard(self, args, kwargs, runner) -> None:
        """Put ``runner`` (the fast path's for these arguments) behind a guard."""
        self._lookups = 0
        if self._guards_built < GUARD_MAX_BUILDS:
            self._guards_built += 1
            self._guard = guarded_call(args, kwargs, runner, config._values, _FLAGS)

    def _tree_signature(self, args, kwargs):
        """``(key, leaves)`` of arguments whose leaves are arrays and scalars in any pytree
        (custom nodes too) beside static arguments: their structure, the static arguments,
        each leaf's type (shape, dtype, weak type, placement), the flags; None for other
        leaves (tracers, references), which take the general path."""
        if self._plain:
            dyn, static = (args, kwargs), ()
        else:
            dyn_args, dyn_kwargs, static_args, static_kwargs = split_static(
                args, kwargs, self.static_argnums, self.static_argnames)
            dyn, static = (dyn_args, dyn_kwargs), (static_args, static_kwargs)
        flat, tree = tree_flatten(dyn)
        key, leaves = [tree, static], []
        if not _add_children(flat, key, leaves):
            return None
        key += config.key()
        key += (config._values["default_backend"], _axis_env.frames)
        return tuple(key), leaves

    def _retree(self, key, runner) -> None:
        """Keep ``runner`` under ``key``, whose structure is the other PyTreeDef form (as
        :meth:`_rekey`): later lookups compare two of optree's in C++."""
        self._fast_trees.pop(key, None)
        self._fast_trees[key] = (runner, type(key[0]))

    def _key(self, args, kwargs):
        dyn_args, dyn_kwargs, static_args, static_kwargs = split_static(
            args, kwargs, self.static_argnums, self.static_argnames)
        if static_args or static_kwargs:
            for where, value in static_args + static_kwargs:
                try:
                    hash(value)
                except TypeError as e:
                    what = f"argument {where}" if isinstance(where, int) else f"argument {where!r}"
                    raise TypeError(f"jit({self.name}): static {what} must be hashable, got a "
                                    f"{type(value).__name__} ({e}); pass a tuple instead of a "
                                    "list, or make it a regular (traced) argument") from None
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        # (Plain Arrays directly: the message naming a leaf is built only for other values.)
        avals = tuple(get_aval(x) if type(x) is Array
                      else abstractify(x, f"jit({self.name}) argument leaf {i}")
                      for i, x in enumerate(leaves))
        # Where the arguments were placed is part of the program's type (shard_map infers
        # its in_specs from it).
        shardings = tuple(argument_sharding(x) for x in leaves)
        key = (in_tree, avals, static_args, static_kwargs, config.key(), _axis_env.frames,
               self.backend.platform, shardings)
        return key, leaves, in_tree, avals, (static_args, static_kwargs, shardings)

    def _entry(self, args, kwargs):
        key, leaves, in_tree, avals, static = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is not None:
            if entry.key_tree_type is not type(in_tree):
                self._rekey(key, entry)
            return entry, leaves
        with self._lock:  # one trace per signature, even when threads race
            entry = self._cache.get(key)
            if entry is None:
                entry = self._trace(in_tree, avals, *static)
                if not entry.consts:  # closures over tracers can't be reused
                    self._cache[key] = entry
                    entry.key_tree_type = type(in_tree)
                    while len(self._cache) > config.jit_cache_size:
                        self._cache.popitem(last=False)
        return entry, leaves

    def _rekey(self, key, entry) -> None:
        """Cache ``entry`` under ``key``, whose structure is the other PyTreeDef form (optree's,
        once it is loaded, against the pure-Python one of the first calls): comparing the two
        forms walks the whole structure in Python (16 us for an nnx model's 31 nodes) at every
        lookup, comparing two of optree's is one C++ call."""
        with self._lock:
            if self._cache.pop(key, None) is entry:
                self._cache[key] = entry
            entry.key_tree_type = type(key[0])

    def _trace(self, in_tree, avals, static_args, static_kwargs, shardings=()):
        store = {}

        def flat_fun(*xs):
            a, k = tree_unflatten(in_tree, xs)
            with tracing_arguments(xs, shardings):
                out = self.fun(*merge_static(a, static_args), **k, **dict(static_kwargs))
            out_leaves, store["tree"] = tree_flatten(out)
            return out_leaves

        hi_before = staged_hi_calls[0]
        jaxpr = trace_to_jaxpr(flat_fun, list(avals), name=f"jit({self.name})")
        jaxpr, consts = hoist_tracer_consts(jaxpr)
        entry = _Entry(jaxpr, store["tree"], consts)
        entry.hi = staged_hi_calls[0] != hi_before
        return entry

    def trace(self, *args, **kwargs) -> Traced:
        """Trace for these arguments: a :class:`Traced` (its ``jaxpr``, ``lower()``)."""
        entry, _ = self._entry(args, kwargs)
        traced = Traced(self, entry, self._key(args, kwargs)[0])
        if entry.hi:
            traced._shown = lambda: self._hi_jaxpr(args, kwargs)
        return traced

    def _hi_jaxpr(self, args, kwargs):
        """The traced program as JAX shows it: high-level values as variables of their
        types, their primitives as ``call_hi_primitive`` equations (``core.hivalues``)."""
        dyn_args, dyn_kwargs, static_args, static_kwargs = split_static(
            args, kwargs, self.static_argnums, self.static_argnames)

        def fun(a, k):
            return self.fun(*merge_static(a, static_args), **k, **dict(static_kwargs))
        return hi_jaxpr(fun, (dyn_args, dyn_kwargs), name=f"jit({self.name})")

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower for these arguments: ``.as_text()`` is the generated source,
        ``.compile()`` the executable.

        >>> print(ft.jit(fnp.sin).lower(fnp.ones(3)).as_text())  # doctest: +SKIP
        """
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """The results' shapes and dtypes (``ShapeDtypeStruct``s) for these arguments, which
        may themselves be ``ShapeDtypeStruct``s; nothing is computed.

        >>> ft.jit(lambda x: x.sum(0)).eval_shape(ft.ShapeDtypeStruct((2, 3), "float32"))
        ShapeDtypeStruct(shape=(3,), dtype=float32)
        """
        return self.trace(*args, **kwargs).out_info

    def cache_size(self) -> int:
        """Number of traced signatures currently cached."""
        return len(self._cache)

    def clear_cache(self) -> None:
        self._cache.clear()
        self._fast.clear()
        self._guard = None
        self._fast_trees.clear()

    def __repr__(self):
        return f"<jit({self.name})>"


def _fast_signature(args, kwargs):
    """``(key, leaves)`` for arguments made of arrays, Python and NumPy scalars in tuples,
    lists, dicts, namedtuples and None (the containers ``tree_flatten`` knows without a
    registered node),
    or None when something else needs the general path. The key also holds the config flags
    that change traced programs; leaves come in ``tree_flatten``'s order."""
    key, leaves = [], []
    if not _add_children(args, key, leaves):
        return None
    if kwargs:
        key.append("**")
        if not _add_node(kwargs, dict, key, leaves):
            return None
    key.append(config._values["enable_x64"])  # (_FLAGS, inline: hot path)
    key.append(config._values["debug_nans"])
    key.append(config._values["enable_custom_prng"])
    key.append(config._values["default_backend"])
    return tuple(key), leaves


# The config flags a fast signature holds (config.key()'s, and the default backend).
_FLAGS = ("enable_x64", "debug_nans", "enable_custom_prng", "default_backend")


def _fast_key(args):
    """The fast signature of arguments that are all arrays or scalars themselves (None
    otherwise): pmap's fast path passes them on as they are."""
    sig = _fast_signature(args, None)
    if sig is None:
        return None
    key, leaves = sig
    if len(leaves) != len(args) or any(a is not b for a, b in zip(leaves, args)):
        return None
    return key


def _add_children(children, key, leaves) -> bool:
    for c in children:
        t = type(c)
        if t is Array:  # the common leaves first, without a call
            v = c._value
            # A placed array's sharding is part of its signature: jit partitions by it.
            key.append((v.shape, v.dtype, c._weak) if c._sharding is None
                       else (v.shape, v.dtype, c._weak, c._sharding))
            leaves.append(c)
        elif t in SCALAR_TYPES:
            key.append(t)
            leaves.append(c)
        elif not _add_node(c, t, key, leaves):
            return False
    return True


def _add_node(x, t, key, leaves) -> bool:
    """Add ``x`` (of type ``t``) to a fast signature; False if it needs the general path."""
    if t is np.ndarray:
        key.append((x.shape, x.dtype, None))
        leaves.append(x)
    elif isinstance(x, np.generic):  # a NumPy scalar's type fixes its dtype
        key.append(t)
        leaves.append(x)
    elif t is tuple or t is list or plain_namedtuple(t):  # (optimizers' states)
        key.append((t, len(x)))
        return _add_children(x, key, leaves)
    elif t is dict:
        try:
            names = sorted(x)
        except TypeError:
            return False
        key.append((dict, tuple(names)))
        return _add_children([x[n] for n in names], key, leaves)
    elif x is None:
        key.append(None)
    else:
        return False
    return True


def jit(fun=None, *, in_shardings=None, out_shardings=None, static_argnums=None,
        static_argnames=None, donate_argnums=None, donate_argnames=None, keep_unused=False,
        device=None, backend=None, inline=False):
    """Compile ``fun``: trace it once per argument signature and run compiled code.

    A new signature's first call returns after tracing: the program runs on the interpreter
    while its kernel compiles on a background thread, and later calls run the kernel (tiered
    jit; results agree within the kernels' few-ulp bounds). Programs with a ``while`` loop or a long ``scan`` compile
    first: interpreting them could take longer. ``block_until_ready`` on those results waits for the
    kernel, ``jit(f).lower(*args).compile()`` compiles before returning, and
    ``config.jit_tiered = False`` (``FUNCTRANS_JIT_TIERED=0``) compiles at every first call.

    ``static_argnums``/``static_argnames`` are passed as Python values (hashable; a new value
    retraces). ``backend`` names the backend that compiles it (``ft.devices(backend)`` lists
    its devices; unknown names raise, listing the available ones); ``device`` compiles for
    that device's backend and places the outputs on it. ``donate_argnums``/``donate_argnames``
    are validated hints: buffers are never reused, so donated arrays stay valid (see
    ``transforms/jit/donation.py``). ``inline=True`` makes calls made while tracing an
    enclosing function (another ``jit``, ``make_jaxpr``, ``vmap``...) record the function's
    equations in place instead of one ``jit`` equation. ``keep_unused`` has no effect
    (unused arguments are always kept). ``in_shardings``/``out_shardings`` place the
    (positional) arguments and the results (see ``transforms/jit/shardings.py``). Usable as
    ``@jit`` or ``@partial(jit, static_argnums=...)``.

    >>> ft.jit(lambda x: x + 1)(1.0)
    Array(2., dtype=float64, weak_type=True)
    """
    check_backend(backend)  # at decoration time: a typo fails where it is written
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"jit: device must be a Device (from ft.devices()), got "
                        f"{type(device).__name__}")
    if device is not None and backend is not None and device.platform != backend:
        raise ValueError(f"jit: device {device} is not a device of backend {backend!r}")
    in_shardings = check_shardings(in_shardings, "in_shardings")
    out_shardings = check_shardings(out_shardings, "out_shardings")
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, keep_unused=keep_unused,
                                 device=device, backend=backend, inline=inline)
    if in_shardings is not None or out_shardings is not None:
        return PlacedJitted(fun, static_argnums, static_argnames, backend, device,
                            donate_argnums, donate_argnames, inline,
                            in_shardings=in_shardings, out_shardings=out_shardings)
    return Jitted(fun, static_argnums, static_argnames, backend, device, donate_argnums,
                  donate_argnames, inline)


class PlacedJitted(Jitted):
    """A jitted function with ``in_shardings``/``out_shardings`` (see ``shardings.py``)."""

    def __init__(self, *args, in_shardings, out_shardings):
        super().__init__(*args)
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        self._plain = False  # (the fast path skips placement)

    def __call__(self, *args, **kwargs):
        eager = _state.trace is EVAL_TRACE
        if eager and self.in_shardings is not None:
            static = set(self.static_argnums)
            dynamic = [a for i, a in enumerate(args) if i not in static]
            placed = iter(place(tuple(dynamic), self.in_shardings, "in_shardings"))
            args = tuple(a if i in static else next(placed) for i, a in enumerate(args))
        out = super().__call__(*args, **kwargs)
        if eager and self.out_shardings is not None:
            out = place(out, self.out_shardings, "out_shardings")
        return out


_untraced_calls = {Jitted: Jitted.__call__, Compiled: Compiled.__call__}


def trace_calls(span) -> None:
    """The profiler's hook (``functrans.profiling``): while a trace is on, every jit call
    (and every call of a ``Compiled``) runs inside ``span(name)``, a context manager given the
    span's name, ``jit(f)``; ``trace_calls(None)`` ends it. The calls are swapped on the
    classes, so calls pay nothing while no trace is on."""
    for cls, call in _untraced_calls.items():
        if span is None:
            cls.__call__ = call
            continue

        cls.__call__ = _traced(call, span)


def _traced(call, span):
    def __call__(self, *args, **kwargs):
        jitted = self if type(self) is not Compiled else self._jitted
        with span(f"jit({jitted.name})"):
            return call(self, *args, **kwargs)
    __call__.__doc__ = call.__doc__
    return __call__
