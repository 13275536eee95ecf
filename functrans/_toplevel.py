"""Small top-level functions of JAX's API: ``jacobian``, ``device_get``, ``typeof``,
``linear_transpose`` and ``effects_barrier``.

    >>> ft.typeof(fnp.ones(3, "float32"))
    ShapedArray(f32[3])
    >>> ft.linear_transpose(lambda x: 2.0 * x, 1.0)(3.0)
    (Array(6., dtype=float64, weak_type=True),)
"""
from __future__ import annotations


from .core import background
from .core.api_util import abstractify, flatten_fun, fun_name
from .core.avals import ShapedArray
from .core.staging import hoist_tracer_consts, trace_to_jaxpr
from .core.trace import Tracer, get_aval
from .transforms.autodiff import jacrev
from .transforms.autodiff.jvp import instantiate
from .transforms.autodiff.transpose import backward_pass
from .core.tree import Partial, tree_flatten, tree_map, tree_unflatten
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["device_get", "effects_barrier", "jacobian", "linear_transpose", "typeof"]


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian of ``fun`` by reverse mode: JAX's name for :func:`functrans.jacrev`.

    >>> ft.jacobian(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float64)
    """
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                  allow_int=allow_int)


def _to_host(x):
    if isinstance(x, Tracer):
        return x  # a value being traced has no host copy (as in JAX)
    to_array = getattr(x, "__array__", None)
    return x if to_array is None else to_array()


def device_get(x):
    """``x`` (a pytree) with its arrays as NumPy arrays; other leaves (Python scalars,
    strings, ...) and traced values are returned as they are.

    >>> ft.device_get({"w": fnp.ones(2), "step": 3})
    {'step': 3, 'w': array([1., 1.])}
    """
    return tree_map(_to_host, x)


def typeof(x):
    """The abstract value of ``x``: its shape, dtype and whether the dtype is weak (from a
    Python scalar), as tracing sees it.

    >>> ft.typeof(1.0), ft.typeof(np.int8(1))
    (ShapedArray(f64[], weak_type=True), ShapedArray(i8[]))

    A :class:`~functrans.ref.Ref` 's type is an ``AbstractRef``; typed keys' dtype is their
    key dtype:

    >>> ft.typeof(ft.new_ref(1.0)), ft.typeof(ft.random.key(0)).dtype
    (Ref{f64[]}, key<fry>)
    """
    from .random import KeyArray
    from .ref import Ref
    if isinstance(x, Ref):
        return x.aval
    if isinstance(x, KeyArray):
        return x.aval
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"typeof: argument of type {type(x).__name__} ({x!r:.60}) is not an "
                        "array or scalar") from None
    return _with_explicit_sharding(x, aval)


def _with_explicit_sharding(x, aval):
    """A placed array's type carries its sharding when its mesh has Explicit axes (sharding
    in types, as JAX shows it: ``float32[8@x,4]``)."""
    from .core.array import Array
    from .core.avals import ShardedShapedArray
    from .core.mesh import Mesh, NamedSharding, PartitionSpec, canonical_spec
    s = getattr(x, "_sharding", None) if isinstance(x, Array) else None
    if type(s) is not NamedSharding or not isinstance(s.mesh, Mesh) or not s.mesh.explicit_axes:
        return aval
    spec = canonical_spec(s.spec, aval.ndim, "typeof")
    explicit = set(s.mesh.explicit_axes)
    parts = [tuple(n for n in names if n in explicit) for names in spec]
    parts = [None if not p else p[0] if len(p) == 1 else p for p in parts]
    sharding = NamedSharding(s.mesh.abstract_mesh, PartitionSpec(*parts))
    return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding)


def effects_barrier() -> None:
    """Wait until work running in the background (jit's compiles, whose first calls run on
    the interpreter meanwhile) is done.

    >>> ft.effects_barrier()
    """
    background.wait_all()


def _dtypes_ok(dtypes) -> bool:
    kinds = {dtype_kind(d) for d in dtypes}
    return kinds <= set("fc") or kinds <= set("iu")


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function ``fun``: a function mapping a cotangent of
    ``fun``'s output to the tuple of cotangents of its arguments. ``primals`` (arrays,
    :class:`ShapeDtypeStruct` s or ShapedArrays) give the arguments' shapes and dtypes only;
    the result is a pytree (a :class:`functrans.tree_util.Partial` holding ``fun``'s
    constants).

    >>> f_t = ft.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y,
    ...                           ft.ShapeDtypeStruct((), "float32"), fnp.float32(0.0))
    >>> f_t(fnp.float32(1.0))
    (Array(0.5, dtype=float32), Array(-0.5, dtype=float32))
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    what = f"linear_transpose({fun_name(fun)})"
    leaves, in_tree = tree_flatten(primals)
    # Only types matter: ShapedArrays are taken as they are (equinox passes them).
    in_avals = [x if isinstance(x, ShapedArray) else abstractify(x, f"{what}: primal leaf {i}")
                for i, x in enumerate(leaves)]
    flat, out_tree = flatten_fun(fun, in_tree)
    jaxpr = trace_to_jaxpr(flat, in_avals, name=what)
    jaxpr, hoisted = hoist_tracer_consts(jaxpr)  # values of enclosing transformations
    out_avals = jaxpr.out_avals
    in_dtypes, out_dtypes = [a.dtype for a in in_avals], [a.dtype for a in out_avals]
    if not _dtypes_ok(in_dtypes + out_dtypes):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        f"complex], and integer -> integer functions, but got {in_dtypes} -> "
                        f"{out_dtypes}.")
    n_nonlinear = len(hoisted)
    linear = [False] * n_nonlinear + [True] * len(leaves)
    expected_tree = out_tree()

    def transposed(consts, hoisted, out_cotangent):
        cts, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != expected_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{expected_tree} but got {ct_tree}")
        for i, (c, a) in enumerate(zip(cts, out_avals)):
            ca = get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(f"cotangent type does not match function output: leaf {i} is "
                                f"{ca.str_short()}, expected {a.str_short()}")
        program = jaxpr.replace(consts=list(consts))
        in_cts = backward_pass(program, linear, [*hoisted, *[None] * len(leaves)], cts)
        in_cts = [instantiate(c) for c in in_cts[n_nonlinear:]]
        return tree_unflatten(in_tree, in_cts)

    return Partial(transposed, list(jaxpr.consts), list(hoisted))
