"""``export``: a jit-compiled function as data: its traced program, argument and result
structures, serializable to bytes and callable again in another process.

    >>> exp = export(ft.jit(lambda x, y: {"s": x + y}))(fnp.ones(2), 1.0)
    >>> exp.in_avals
    (ShapedArray(f64[2]), ShapedArray(f64[], weak_type=True))
    >>> deserialize(exp.serialize()).call(fnp.arange(2.0), 2.0)
    {'s': Array([2., 3.], dtype=float64)}
"""
from __future__ import annotations

import functools
from collections import OrderedDict

import numpy as np

from functrans.core.api_util import ShapeDtypeStruct, abstractify
from functrans.core.avals import ShapedArray
from functrans.core.dtypes import result_type
from functrans.core.shape_poly import is_symbolic_dim, is_symbolic_shape
from functrans.core.trace import EVAL_TRACE, Tracer, _state
from functrans.core.tree import (PyTreeDef, flatten_up_to, tree_flatten, tree_unflatten)
from functrans.transforms.jit.api import Jitted, jit
from functrans.transforms.jit.call import jit_p
from functrans.transforms.jit.executable import executable_for

from .jitted_numpy import is_jitted_in_jax
from .serialization import FORMAT_VERSION, deserialize_payload, serialize_payload

DEFAULT_PLATFORMS = ("cpu",)
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
"""The platforms an export may name (JAX's). The program is the same for each (a jaxpr, which
any backend compiles); ``call`` checks that the platform it runs on is among them."""


class DisabledSafetyCheck:
    """A check ``Exported.call`` skips (``export(..., disabled_checks=[...])``):
    ``DisabledSafetyCheck.platform()`` lets an export made for other platforms run here;
    ``custom_call(name)`` is accepted (functrans's programs hold no custom calls).

    >>> DisabledSafetyCheck.platform(), DisabledSafetyCheck.custom_call("my_call")
    (platform, custom_call:my_call)
    """

    __slots__ = ("_impl",)

    def __init__(self, _impl: str):
        self._impl = _impl

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        return self._impl[len("custom_call:"):] if self._impl.startswith("custom_call:") else None

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and other._impl == self._impl

    def __hash__(self):
        return hash(self._impl)

    def __repr__(self):
        return self._impl


def default_export_platform() -> str:
    """The platform ``export`` targets when given none: the default backend's.

    >>> default_export_platform()
    'cpu'
    """
    from functrans.core.devices import get_backend
    return get_backend(None).platform


class Exported:
    """An exported function: a closed, traced program plus what calling it needs.

    Attributes: ``fun_name``, ``in_tree`` (structure of ``(args, kwargs)``, static arguments
    excluded), ``out_tree``, ``in_avals``/``out_avals`` (one ShapedArray per leaf),
    ``platforms`` and ``jaxpr`` (the program, constants included).

    >>> exp = export(ft.jit(fnp.sin))(ft.ShapeDtypeStruct((3,), "float32"))
    >>> exp.in_tree, exp.out_avals, exp.platforms
    (PyTreeDef(((*,), {})), (ShapedArray(f32[3]),), ('cpu',))
    """

    def __init__(self, fun_name: str, jaxpr, in_tree: PyTreeDef, out_tree: PyTreeDef,
                 platforms=DEFAULT_PLATFORMS, disabled_safety_checks=(), nr_devices=1,
                 in_specs=None):
        self.fun_name = fun_name
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.nr_devices = int(nr_devices)
        self.in_specs = tuple(in_specs) if in_specs is not None else \
            (None,) * len(jaxpr.invars)
        self.jaxpr = jaxpr
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.platforms = tuple(platforms)
        self.in_avals = tuple(v.aval for v in jaxpr.invars)
        self.out_avals = tuple(x.aval for x in jaxpr.outvars)
        self._paths = None
        # Symbolic shapes: the program specialized per binding of the dimension variables.
        self._symbolic = any(is_symbolic_shape(a.shape) for a in self.in_avals)
        self._specialized: dict = {}

    def in_shardings_jax(self, mesh) -> tuple:
        """The arguments' shardings on ``mesh`` (one per argument leaf; None where the export
        did not split it), for placing arguments before ``call``; the mesh must have the
        export's number of devices.

        >>> from functrans.core.mesh import AbstractMesh, NamedSharding, PartitionSpec as P
        >>> m = AbstractMesh((4,), ("a",))
        >>> sds = ft.ShapeDtypeStruct((8,), "float32", sharding=NamedSharding(m, P("a")))
        >>> export(ft.jit(fnp.sin))(sds).in_shardings_jax(m)[0].spec
        PartitionSpec('a')
        """
        from functrans.core.mesh import NamedSharding
        size = getattr(mesh, "size", None)
        if self.nr_devices > 1 and size != self.nr_devices:
            raise ValueError(f"in_shardings_jax: the mesh has {size} devices, the function "
                             f"was exported for {self.nr_devices}")
        return tuple(None if spec is None else NamedSharding(mesh, spec)
                     for spec in self.in_specs)

    def out_shardings_jax(self, mesh) -> tuple:
        """The results' shardings on ``mesh``: None each (the export records none; results
        are placed as the program computes them)."""
        return (None,) * len(self.out_avals)

    @property
    def calling_convention_version(self) -> int:
        """The version of the format by which the export is serialized and called (JAX's
        calling convention version; functrans's export format version).

        >>> export(ft.jit(fnp.sin))(1.0).calling_convention_version
        1
        """
        return FORMAT_VERSION

    def as_text(self) -> str:
        """The program as jaxpr text.

        >>> print(export(ft.jit(lambda x: x * 2))(1.0).as_text())
        { lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b,) }
        """
        return str(self.jaxpr)

    def serialize(self) -> bytes:
        """The export as bytes (see :mod:`functrans.export.serialization` for the format).

        >>> export(ft.jit(fnp.cos))(1.0).serialize()[:8]
        b'FTEXPORT'
        """
        return serialize_payload(fun_name=self.fun_name, jaxpr=self.jaxpr, in_tree=self.in_tree,
                                 out_tree=self.out_tree, platforms=self.platforms,
                                 nr_devices=self.nr_devices, in_specs=self.in_specs,
                                 disabled_checks=[repr(c) for c in
                                                  self.disabled_safety_checks])

    def call(self, *args, **kwargs):
        """Run the exported program on arguments of the exported structure, shapes and dtypes
        (static arguments were fixed at export and are not passed again). Works inside
        ``jit``, ``vmap``, ``grad`` and the other transformations.

        >>> exp = export(ft.jit(lambda x: x ** 2))(ft.ShapeDtypeStruct((), "float64"))
        >>> exp.call(3.0), ft.grad(exp.call)(3.0)
        (Array(9., dtype=float64), Array(6., dtype=float64, weak_type=True))
        >>> exp.call(fnp.ones(2))
        Traceback (most recent call last):
        ...
        ValueError: Exported.call(<lambda>): args[0] has shape (2,), the exported function expects ...
        """
        leaves = self._check_args(args, kwargs)
        jaxpr = self._program_for(leaves) if self._symbolic else self.jaxpr
        if self.nr_devices > 1 and not any(isinstance(x, Tracer) for x in leaves):
            # (traced arguments take the enclosing computation's placement)
            devices = set()
            for x in leaves:
                devices |= set(getattr(getattr(x, "sharding", None), "device_set", ()) or ())
            if len(devices) != self.nr_devices:
                raise ValueError(f"Function {self.fun_name} was exported for "
                                 f"{self.nr_devices} devices and is called in a context with "
                                 f"{len(devices) or 1} devices, which is not allowed.")
        here = default_export_platform()
        if here not in self.platforms and \
                DisabledSafetyCheck.platform() not in self.disabled_safety_checks:
            raise ValueError(f"Function '{self.fun_name}' was exported for platforms "
                             f"'{self.platforms}' but it is used on '{(here,)}'.")
        if _state.trace is EVAL_TRACE:
            # As jit's own dispatch: the kernel sees the caller's arrays as they are, so it
            # reuses the original function's compiled specialization (binding would hand it
            # read-only views, a different Numba signature and a second compilation).
            outs = executable_for(jaxpr, self.fun_name)(*leaves)
        else:
            outs = jit_p.bind_all(*leaves, jaxpr=jaxpr, name=self.fun_name)
        return tree_unflatten(self.out_tree, outs)

    def _check_args(self, args, kwargs) -> list:
        what = f"Exported.call({self.fun_name})"
        leaves, tree = tree_flatten((args, kwargs))
        if tree != self.in_tree:
            try:  # names the first place where the structures differ
                flatten_up_to(self.in_tree, (args, kwargs), "arguments")
                detail = ""
            except ValueError as e:
                detail = f" ({e})"
            raise TypeError(f"{what}: the arguments have structure {_show(tree)}, the exported "
                            f"function expects {_show(self.in_tree)}{detail}")
        if self._paths is None:
            self._paths = leaf_paths(self.in_tree)
        out = []
        for x, want, path in zip(leaves, self.in_avals, self._paths):
            got = abstractify(x, f"{what}: {path}")
            if self._symbolic and is_symbolic_shape(want.shape):
                if got.ndim != want.ndim:
                    raise ValueError(f"Rank mismatch for {path}: expected {want.shape} and "
                                     f"called with {got.shape}")
                for i, (g, w) in enumerate(zip(got.shape, want.shape)):
                    if not is_symbolic_dim(w) and g != w:
                        raise ValueError(f"Shape mismatch for {path}.shape[{i}] (expected same "
                                         f"constant): expected {want.shape} and called with "
                                         f"{got.shape}")
            elif got.shape != want.shape:
                raise ValueError(f"{what}: {path} has shape {got.shape}, the exported function "
                                 f"expects shape {want.shape} ({want.str_short()})")
            if got.dtype != want.dtype:
                # A Python scalar (weak type) takes the expected dtype where promotion would.
                if not (got.weak_type and result_type((want.dtype, False), (got.dtype, True))
                        == (want.dtype, False)):
                    raise TypeError(f"{what}: {path} has dtype {got.dtype}, the exported "
                                    f"function expects {want.dtype} ({want.str_short()})")
                x = _convert(x, want)
            out.append(x)
        return out

    def _program_for(self, leaves):
        """The program specialized to the dimension variables these arguments bind."""
        from .shape_poly import solve_dim_vars, specialize
        shapes = [tuple(np.shape(x)) if not isinstance(x, Tracer) else x.aval.shape
                  for x in leaves]
        key = tuple(shapes)
        prog = self._specialized.get(key)
        if prog is None:
            if self._paths is None:
                self._paths = leaf_paths(self.in_tree)
            env = solve_dim_vars(self.in_avals, shapes, self._paths)
            prog = self._specialized[key] = specialize(self.jaxpr, env)
        return prog

    def __repr__(self):
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"Exported({self.fun_name}: ({ins}) -> ({outs}), platforms={self.platforms})"


def _convert(x, aval: ShapedArray):
    if isinstance(x, Tracer):
        from functrans import lax
        return lax.convert_element_type(x, aval.dtype)
    return np.asarray(x, dtype=aval.dtype)


def _show(tree: PyTreeDef) -> str:
    return repr(tree)[len("PyTreeDef("):-1]


def leaf_paths(tree: PyTreeDef) -> list[str]:
    """Names of the leaves of an ``(args, kwargs)`` structure, as a user would index them.

    >>> from functrans.core.tree import tree_structure
    >>> leaf_paths(tree_structure(((1, {"w": [2, 3]}), {"b": 4})))
    ['args[0]', "args[1]['w'][0]", "args[1]['w'][1]", "kwargs['b']"]
    """
    out: list = []

    def walk(td, path):
        if td.node_type is None:
            out.append(path)
            return
        kids = td.children()
        keys = td.aux if td.node_type in (dict, OrderedDict) else range(len(kids))
        for k, c in zip(keys, kids):
            walk(c, f"{path}[{k!r}]")

    kids = tree.children()
    if tree.node_type is tuple and len(kids) == 2:
        walk(kids[0], "args")
        walk(kids[1], "kwargs")
    else:
        walk(tree, "arguments")
    return out


def _refuse_user_kernels(jaxpr, allowed=frozenset()) -> None:
    """A user's Numba kernel (``numba_call``) and a library's primitive (its impl and rules
    are Python) are code the format cannot carry: refuse them when exporting, naming them,
    rather than when serializing. A library primitive named in ``allowed`` (JAX's
    ``DisabledSafetyCheck.custom_call(name)``, JAX's check for calls outside the program) is
    exported for calling in this process."""
    from functrans.core.ir import walk_jaxprs
    from .serialization import UnserializableError
    for e in jaxpr.eqns:
        if e.prim.name in ("numba_call", "numba_vectorize"):
            code = e.params.get("kernel") or e.params.get("code")
            raise UnserializableError(
                f"{e.prim.name} of kernel '{code.name}' cannot be exported: its code is "
                "Python, not serializable")
        if hasattr(e.prim, "facade") and e.prim.name not in allowed:
            raise UnserializableError(
                f"the library primitive '{e.prim.name}' cannot be exported: its rules are "
                "Python code, not serializable; pass disabled_checks=[DisabledSafetyCheck."
                f"custom_call('{e.prim.name}')] to export it for calling in this process")
        for sub in walk_jaxprs(e.params):
            _refuse_user_kernels(sub, allowed)


@functools.lru_cache(maxsize=None)
def _jitted(fun):
    return jit(fun)


def export(fun_or_jitted, *, platforms=None, disabled_checks=()):
    """``export(jit(f))(*args, **kwargs)``: trace ``f`` for these argument types (arrays,
    scalars or ``ShapeDtypeStruct``) and return an :class:`Exported`. ``platforms`` (default:
    this one) are recorded: calling it elsewhere raises ``ValueError`` unless
    ``disabled_checks`` holds ``DisabledSafetyCheck.platform()``.

    >>> exp = export(ft.jit(lambda x: fnp.sum(x ** 2)))(ft.ShapeDtypeStruct((3,), "float64"))
    >>> exp.call(fnp.arange(3.0))
    Array(5., dtype=float64)
    """
    if not isinstance(fun_or_jitted, Jitted):
        if not is_jitted_in_jax(fun_or_jitted):
            raise ValueError("Function to be exported must be the result of `jit` but is: "
                             f"{fun_or_jitted!r} (wrap it as export(ft.jit(f)))")
        fun_or_jitted = _jitted(fun_or_jitted)  # jnp.cos and the like: jitted in JAX
    platforms = (default_export_platform(),) if platforms is None else tuple(platforms)
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown or not platforms:
        raise ValueError(f"export: unknown platforms {unknown or platforms}; the platforms are "
                         f"{PLATFORMS}")
    disabled_checks = tuple(disabled_checks)
    for c in disabled_checks:
        if not isinstance(c, DisabledSafetyCheck):
            raise TypeError(f"export: disabled_checks must hold DisabledSafetyCheck values, got "
                            f"{type(c).__name__}")
    jitted = fun_or_jitted

    def do_export(*args, **kwargs) -> Exported:
        entry, _ = jitted._entry(args, kwargs)
        if entry.consts:
            raise TypeError(f"export({jitted.name}): the function closes over traced values of "
                            "an enclosing transformation; export it outside transformations")
        _refuse_user_kernels(entry.jaxpr, frozenset(
            c.is_custom_call() for c in disabled_checks if c.is_custom_call()))
        in_tree = jitted._key(args, kwargs)[2]  # (args, kwargs) minus static ones
        in_avals = [v.aval for v in entry.jaxpr.invars]
        from .shape_poly import check_dim_vars_known, check_solvable
        if any(is_symbolic_shape(a.shape) for a in in_avals):
            check_solvable(in_avals, leaf_paths(in_tree))
        check_dim_vars_known(entry.jaxpr, in_avals)
        nr_devices, in_specs = _arg_shardings(jitted, args, kwargs)
        return Exported(jitted.name, entry.jaxpr, in_tree, entry.out_tree, platforms,
                        disabled_checks, nr_devices, in_specs)

    return do_export


def _arg_shardings(jitted, args, kwargs):
    """The number of devices the arguments are split over (their meshes' size; 1 if none is)
    and each argument leaf's PartitionSpec (None where unsplit)."""
    from functrans.core.api_util import split_static
    from functrans.core.mesh import NamedSharding
    dyn_args, dyn_kwargs, _, _ = split_static(args, kwargs, jitted.static_argnums,
                                              jitted.static_argnames)
    leaves, _ = tree_flatten((dyn_args, dyn_kwargs))
    sizes, specs = set(), []
    for x in leaves:
        s = x._sharding if isinstance(x, ShapeDtypeStruct) else getattr(x, "_sharding", None)
        if isinstance(s, NamedSharding) and s.mesh.size > 1:
            sizes.add(s.mesh.size)
            specs.append(s.spec)
        else:
            specs.append(None)
    if len(sizes) > 1:
        raise ValueError(f"export({jitted.name}): the arguments are split over meshes of "
                         f"different sizes {sorted(sizes)}")
    return (sizes.pop() if sizes else 1), specs


def deserialize(data) -> Exported:
    """Read bytes written by :meth:`Exported.serialize`. Never runs code from the data; bad
    input raises an :class:`~functrans.export.ExportError` subclass (a ValueError).

    >>> exp = deserialize(export(ft.jit(fnp.tanh))(0.5).serialize())
    >>> bool(exp.call(0.5) == fnp.tanh(0.5))
    True
    """
    d = deserialize_payload(data)
    checks = [DisabledSafetyCheck(c) for c in d["disabled_checks"]]
    return Exported(d["fun_name"], d["jaxpr"], d["in_tree"], d["out_tree"], d["platforms"],
                    checks, d["nr_devices"], d["in_specs"])
