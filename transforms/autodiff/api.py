"""The autodiff API with JAX's signatures: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev (and jacobian, JAX's name for it), hessian.

``linearize`` = JVP + partial evaluation; ``vjp`` = transpose of the linearized program;
``grad`` = ``vjp`` seeded with 1.0::

    >>> import functrans as ft, functrans.numpy as fnp
    >>> ft.grad(lambda x: fnp.sin(x) * x)(0.0)
    Array(0., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import functools

import numpy as np

from functrans.core.api_util import fun_name, normalize_argnums
from functrans.core.array import Array
from functrans.core.eval import eval_jaxpr
from functrans.core.hivalues import tangent_view
from functrans.core.ir import Jaxpr
from functrans.core.mesh import NamedSharding
from functrans.core.shape_poly import is_symbolic_dim
from functrans.core.config import config
from functrans.core.trace import EVAL_TRACE, current_trace, get_aval, new_trace
from functrans.core.tree import tree_flatten, tree_map, tree_structure, tree_unflatten

from .. import ops
from .jvp import Zero, instantiate, jvp_flat, tangent_aval
from .partial_eval import PartialEvalTrace
from .ref_args import (on_ref_values, ref_arguments, refuse_ref_arguments, with_plumbing_refs,
                       write_back)
from .tape import vjp_on_tape
from .transpose import backward_pass
from .vjp_function import NotNeeded, NotSaveable, VJP, saveable_mask
from functrans.core.dtypes import kind as dtype_kind


def _check_tuple(name, x, what):
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"{name}: {what} must be a tuple or list, got {type(x).__name__}")


def _flatten_fun(fun, in_tree, has_aux, what):
    """Flat function returning flat outputs; records output (and aux) structure."""
    store = {}

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{what} with has_aux=True: the function must return a pair "
                                f"(output, aux), got {type(out).__name__}")
            out, aux = out
            primal_of = getattr(current_trace(), "primal_of", None)
            # aux is not differentiated: the caller gets its primal values, not our tracers
            store["aux"] = aux if primal_of is None else tree_map(primal_of, aux)
        leaves_out, store["tree"] = tree_flatten(out)
        return leaves_out

    return flat, store


def _is_float(aval) -> bool:
    """Has a tangent space: floating-point or complex (JAX's inexact dtypes)."""
    return dtype_kind(aval.dtype) in "fc"


def _is_complex(aval) -> bool:
    return dtype_kind(aval.dtype) == "c"


_HOLO_HINT = ("For holomorphic differentiation, pass holomorphic=True. For differentiation of "
              "non-holomorphic functions involving complex {}, use vjp directly.")


def _check_holomorphic_inputs(what, leaves, holomorphic):
    """holomorphic=True needs complex inputs, as in JAX."""
    if holomorphic:
        for leaf in leaves:
            a = get_aval(leaf)
            if not _is_complex(a):
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex "
                                f"dtype, got {a.str_short()}")


def _check_outputs(what, leaves, holomorphic, real_required):
    """holomorphic=True needs complex outputs; reverse mode without it needs real ones."""
    for leaf in leaves:
        a = get_aval(leaf)
        if holomorphic and not _is_complex(a):
            raise TypeError(f"{what} with holomorphic=True requires outputs with complex "
                            f"dtype, got {a.str_short()}")
        if not holomorphic and real_required and _is_complex(a):
            raise TypeError(f"{what} requires real-valued outputs (a floating-point dtype), got "
                            f"{a.str_short()}. " + _HOLO_HINT.format("outputs"))


def jvp(fun, primals, tangents, has_aux=False):
    """Forward-mode derivative: ``(fun(*primals), J @ tangents)``.

    >>> ft.jvp(fnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float64, weak_type=True), Array(1., dtype=float64, weak_type=True))
    """
    what = f"jvp({fun_name(fun)})"
    _check_tuple(what, primals, "primals")
    _check_tuple(what, tangents, "tangents")
    primals, rebuild = tangent_view(tuple(primals))  # a high-level value's tangent: its
    if rebuild is not None:  # tangent type's, through its carrier
        fun = _on_rebuilt(fun, rebuild)
    p_flat, in_tree = tree_flatten(tuple(primals))
    t_flat, t_tree = tree_flatten(tuple(tangents))
    if in_tree != t_tree:
        raise TypeError(f"{what}: primal and tangent arguments must have the same tree "
                        f"structure, got {in_tree} and {t_tree}")
    tangents_in = []
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        pa, ta = get_aval(p), get_aval(t)
        if not _is_float(pa):
            tangents_in.append(Zero(pa))  # integer inputs have no tangent space
            continue
        if pa.shape != ta.shape or pa.dtype != ta.dtype:
            raise TypeError(f"{what}: primal and tangent arguments do not match at leaf {i}: "
                            f"primal {pa.str_short()}, tangent {ta.str_short()} (dtypes and "
                            "shapes must be equal)")
        tangents_in.append(t)
    flat, store = _flatten_fun(fun, in_tree, has_aux, what)
    p_out, t_out = jvp_flat(flat, p_flat, tangents_in, transform_stack=True)
    # A symbolic zero leaves as an Array of its tangent type, as JAX's (not a NumPy zero:
    # callers compare types, e.g. equinox's tree_equal(typematch=True))
    t_out = [Array._wrap(np.zeros(t.aval.shape, t.aval.dtype), t.aval.weak_type)
             if type(t) is Zero else t for t in t_out]
    out = tree_unflatten(store["tree"], p_out), tree_unflatten(store["tree"], t_out)
    return out + (store["aux"],) if has_aux else out


def _float_primals(primals):
    """The primals (NumPy inputs made Arrays once here, rather than in every primitive that
    uses them) and which of them have a tangent space."""
    primals = [Array(p) if type(p) is np.ndarray else p for p in primals]
    return primals, [_is_float(get_aval(p)) for p in primals]


def linearize_flat(fun, primals):
    """``(primals_out, jaxpr, float_mask)``: jaxpr maps the tangents of the float inputs
    (``float_mask``) to the output tangents; its consts are the residuals."""
    primals, mask = _float_primals(primals)
    pe = PartialEvalTrace(current_trace(), "linearize")
    with new_trace(pe):
        tangents = [pe.new_arg(tangent_aval(get_aval(p))) if m else Zero(get_aval(p))
                    for p, m in zip(primals, mask)]
        p_out, t_out = jvp_flat(fun, primals, tangents, transform_stack=True)
        if any(pe.is_unknown(p) for p in p_out):
            raise AssertionError("linearize: a primal output depends on the tangents")
        jaxpr = pe.to_jaxpr([instantiate(t) for t in t_out])
    return p_out, jaxpr, mask


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the linearized program.

    >>> y, f_jvp = ft.linearize(fnp.sin, 0.0)
    >>> f_jvp(2.0)
    Array(2., dtype=float64, weak_type=True)
    """
    what = f"linearize({fun_name(fun)})"
    p_flat, in_tree = tree_flatten(primals)
    flat, store = _flatten_fun(fun, in_tree, has_aux, what)
    p_out, jaxpr, mask = linearize_flat(flat, p_flat)
    out_tree = store["tree"]

    def f_jvp(*tangents):
        t_flat, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"{what}: f_jvp expects tangents with structure {in_tree}, got "
                            f"{t_tree}")
        outs = eval_jaxpr(jaxpr, *[t for t, m in zip(t_flat, mask) if m])
        return tree_unflatten(out_tree, outs)

    out = tree_unflatten(out_tree, p_out)
    return (out, f_jvp, store["aux"]) if has_aux else (out, f_jvp)


def vjp(fun, *primals, has_aux=False, saveable_args=True):
    """``(fun(*primals), f_vjp)`` where ``f_vjp(ct)`` returns one cotangent per primal;
    ``f_vjp`` is a :class:`VJP`, a pytree whose leaves are the residuals (so it can be returned
    from ``jit`` and ``make_jaxpr`` shows what the forward pass saves). ``saveable_args`` (a
    tree of bools, a prefix of the arguments) keeps the arguments marked False out of the
    saved state: they show as ``NotSaveable()`` in ``f_vjp.args_res`` until put back.

    >>> y, f_vjp = ft.vjp(fnp.sin, 0.0)
    >>> f_vjp(1.0)
    (Array(1., dtype=float64, weak_type=True),)
    """
    what = f"vjp({fun_name(fun)})"
    primals, rebuild = tangent_view(primals)  # high-level values: by their tangent carriers
    if rebuild is not None:
        fun = _on_rebuilt(fun, rebuild)
    p_flat, in_tree = tree_flatten(primals)
    unsaved = {i for i, s in enumerate(saveable_mask(saveable_args, primals)) if not s}
    refs = ref_arguments(primals, p_flat, what)
    if refs:  # differentiated with respect to the values they hold
        p_flat, fun, ref_out_tree = on_ref_values(fun, p_flat, in_tree, refs, has_aux)
    p_flat, _ = _float_primals(p_flat)
    p_out, out_tree, backward, aux = _vjp_flat(fun, p_flat, in_tree, has_aux, what)
    finals = []
    if refs:
        p_out, out_tree, finals = write_back(refs, p_out, ref_out_tree)
    out_avals = [get_aval(p) for p in p_out]

    def apply(residuals, ct):
        ct_flat, ct_tree = tree_flatten(ct)
        # (the references' final values are outputs of the program, without a cotangent)
        extra = [_zeros(get_aval(v)) for v in finals]
        if ct_tree != out_tree:
            raise TypeError(f"{what}: the cotangent passed to f_vjp has tree structure "
                            f"{ct_tree}, expected the output's structure {out_tree}")
        for i, (c, a) in enumerate(zip(ct_flat, out_avals)):
            ca = get_aval(c)
            if ca.shape != a.shape or (_is_float(a) and ca.dtype != a.dtype):
                raise TypeError(f"{what}: cotangent {ca.str_short()} at output leaf {i} does "
                                f"not match the primal output type {a.str_short()}")
        if backward.residuals is None and residuals is not None and len(residuals) == len(
                on_tape) and all(a is b for a, b in zip(residuals, on_tape)):
            residuals = None  # the tape's own: its fast path
        return tree_unflatten(in_tree, backward(ct_flat + extra, residuals))

    on_tape = []  # (what an eager VJP's backward pass reads unless its leaves are replaced)
    f_vjp = _make_vjp(primals, p_flat, backward, apply, set(refs), unsaved, on_tape)
    out = tree_unflatten(out_tree, p_out)
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


_PYTHON_SCALARS = (bool, int, float, complex)


def _make_vjp(primals, p_flat, backward, apply, ref_leaves=frozenset(),
              unsaved=frozenset(), on_tape=None) -> VJP:
    """The :class:`VJP` of ``backward``: the residuals that are arguments (the very values
    passed) go to ``args_res``, the others to ``opaque_residuals``; the arguments that are
    references (flat positions ``ref_leaves``) take their gradients through ``with_refs``."""
    ref_args, start = [], 0
    for k, arg in enumerate(primals):
        if start in ref_leaves:
            ref_args.append(k)
        start += tree_structure(arg).num_leaves

    def build():
        # Python scalars are constants of the backward pass, as in JAX: never in args_res; nor
        # are the values of references (the references are the arguments).
        index = {id(p): i for i, p in enumerate(p_flat)
                 if type(p) not in _PYTHON_SCALARS and i not in ref_leaves}
        allowed = set(index.values())
        if backward.residuals is None:  # on the tape: its residuals and the arguments it read
            residuals, sources = backward.tape_residuals()
            # (an argument read only as a literal of a program is no residual slot: it is
            # listed, and checked when put back, but the tape reads its own)
            extra = sorted(set(backward.args_read()) & allowed - set(sources))
            residuals, sources = residuals + [p_flat[i] for i in extra], sources + extra
        else:
            residuals = backward.residuals
            sources = [index.get(id(r)) for r in residuals]
            sources = [i if i is not None and r is p_flat[i] else None
                       for i, r in zip(sources, residuals)]
        needed, layout, opaque = set(), [], []
        for r, i in zip(residuals, sources):
            if i is not None and i in allowed:
                needed.add(i)
                layout.append(("arg", i))
            else:
                layout.append(("opaque", len(opaque)))
                opaque.append(r)
        layout = tuple(layout)
        arg_trees, args_res, start = [], [], 0
        for arg in primals:
            tree = tree_structure(arg)
            n = tree.num_leaves
            args_res.append(tree_unflatten(tree, [
                (NotSaveable() if i in unsaved else p_flat[i]) if i in needed else NotNeeded()
                for i in range(start, start + n)]))
            arg_trees.append(tree)
            start += n
        if on_tape is not None and backward.residuals is None:
            on_tape[:] = [opaque[k] if kind == "opaque" else p_flat[k] for kind, k in layout]
        return args_res, opaque, layout, tuple(arg_trees)

    if backward.residuals is None and not unsaved and not ref_args:
        return VJP.lazy(build, apply)  # (listed when asked for: most are called once)
    args_res, opaque, layout, arg_trees = build()
    return VJP(args_res, opaque, apply, layout, arg_trees, tuple(ref_args))


def _spread(values) -> bool:
    """Whether some value is spread over processes or placed on a mesh of several devices:
    the tape computes whole NumPy values, the general path partitions each operation (its
    results keep their shardings, as JAX's)."""
    for v in values:
        if getattr(type(v), "_spread", False) or getattr(type(v), "_unreduced", False):
            return True
        s = getattr(v, "_sharding", None)
        if type(s) is NamedSharding and s.mesh.size > 1:
            return True
    return False


def _vjp_flat(fun, p_flat, in_tree, has_aux, what):
    """``vjp`` on flat primals: ``(primals_out, out_tree, backward, aux)``, where
    ``backward(cts_out)`` maps flat output cotangents (checked by the caller) to flat input
    cotangents."""
    flat, store = _flatten_fun(fun, in_tree, has_aux, what)
    if current_trace() is EVAL_TRACE and not config.debug_nans and not _spread(p_flat):
        # Eager: per-primitive linearizations cached by signature, recorded on a tape
        # (debug_nans takes the general path: the eval trace checks every primitive's outputs;
        # so do arrays spread over processes, whose values the tape cannot hold).
        p_flat, mask = _float_primals(p_flat)
        p_out, on_tape = vjp_on_tape(flat, p_flat, mask)
        residuals = None  # (held by the tape; a VJP lists them: backward.tape_residuals)
        positions = [i for i, m in enumerate(mask) if m]

        def transpose(cts, res):
            return on_tape(cts, res)
    else:
        p_out, residuals, transpose = _traced_backward(flat, p_flat)
        mask = _float_primals(p_flat)[1]
    out_avals = [get_aval(p) for p in p_out]
    in_avals = [get_aval(p) for p in p_flat]

    def backward(ct_flat, res=None):
        cts = transpose([c if _is_float(a) else Zero(a) for c, a in zip(ct_flat, out_avals)],
                        res)
        it = iter(cts)
        flat_cts = [instantiate(next(it)) if m else _zeros(a) for m, a in zip(mask, in_avals)]
        # As in JAX, a cotangent has its primal's type, weak type included (a Python float in,
        # a weakly typed gradient out), so it promotes like the primal did.
        return [ops.convert(c, a.dtype, weak_type=True)
                if a.weak_type and not get_aval(c).weak_type else c
                for c, a in zip(flat_cts, in_avals)]

    backward.residuals = residuals
    if residuals is None:
        backward.args_read = lambda: [positions[i] for i in on_tape.inputs_read()]

        def tape_residuals():
            """The tape's residuals and, for each, the argument it is the very buffer of."""
            return on_tape.residual_values(), [None if s is None else positions[s]
                                               for s in on_tape.residual_sources()]
        backward.tape_residuals = tape_residuals
    return p_out, store["tree"], backward, store.get("aux")


def _traced_backward(flat, p_flat):
    """``(primals_out, residuals, transpose)`` of flat ``fun`` linearized by tracing;
    ``transpose(cts, res)`` runs the backward pass on residuals ``res`` (None: its own)."""
    p_out, jaxpr, _ = linearize_flat(flat, p_flat)
    n = len(jaxpr.invars)

    def transpose(cts, res):
        linear = jaxpr if res is None else Jaxpr(jaxpr.constvars, res, jaxpr.invars,
                                                  jaxpr.outvars, jaxpr.eqns)
        return backward_pass(linear, [True] * n, [None] * n, cts, transform_stack=True)
    return p_out, list(jaxpr.consts), transpose


def _zeros(aval):
    return Array._wrap(np.zeros(aval.shape, aval.dtype))


def _ones_like(x):
    a = get_aval(x)
    return Array._wrap(np.ones(a.shape, a.dtype), a.weak_type)


def _on_rebuilt(fun, rebuild):
    """``fun`` of the tangent view of its arguments (``core.hivalues.tangent_view``): a
    high-level value is differentiated through its tangent carrier, so its derivative has its
    type's tangent type."""
    @functools.wraps(fun)
    def on_values(*view):
        return fun(*rebuild(view))
    return on_values


def _with_args_at(fun, args, kwargs, nums):
    """``fun`` as a function of the arguments at positions ``nums`` only (the others fixed)."""
    def partial_fun(*dyn_args):
        full = list(args)
        for i, a in zip(nums, dyn_args):
            full[i] = a
        return fun(*full, **kwargs)
    return partial_fun


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``(fun(*args), grad(fun)(*args))`` in one pass.

    >>> ft.value_and_grad(lambda x: x ** 2)(3.0)
    (Array(9., dtype=float64, weak_type=True), Array(6., dtype=float64, weak_type=True))
    """
    what = f"grad({fun_name(fun)})"

    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kwargs):
        nums = normalize_argnums(argnums, len(args), what)
        refuse_ref_arguments(what, [args[i] for i in nums], nums)
        dyn, rebuild = tangent_view(tuple(args[i] for i in nums))
        p_flat, in_tree = tree_flatten(dyn)
        for leaf in p_flat:
            a = get_aval(leaf)
            if not _is_float(a) and not allow_int:
                raise TypeError(
                    f"{what} requires floating-point or complex inputs, but argument "
                    f"{nums[0] if len(nums) == 1 else nums} has a leaf of dtype {a.dtype}. Use "
                    "vjp, or set allow_int=True, to differentiate with respect to integers")
        _check_holomorphic_inputs(what, p_flat, holomorphic)

        partial_fun = with_plumbing_refs(_with_args_at(fun, args, kwargs, nums), args, nums)
        if rebuild is not None:
            partial_fun = _on_rebuilt(partial_fun, rebuild)
        p_out, out_tree, backward, aux = _vjp_flat(
            partial_fun, p_flat, in_tree, has_aux, f"vjp({fun_name(partial_fun)})")
        if len(p_out) != 1 or out_tree.num_nodes != 1:
            raise TypeError(f"{what}: gradient is only defined for functions with a single "
                            f"scalar output, got {out_tree}")
        ans = p_out[0]
        a = get_aval(ans)
        if a.shape != ():
            raise TypeError(f"{what}: gradient is only defined for scalar-output functions; "
                            f"the output has shape {a.shape}. Use jacrev/jacfwd, or vjp")
        if not _is_float(a):
            raise TypeError(f"{what}: the output must be a float scalar, got {a.str_short()}")
        _check_outputs(what, p_out, holomorphic, real_required=True)
        g = tree_unflatten(in_tree, backward([_ones_like(ans)]))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((ans, aux), g) if has_aux else (ans, g)

    return value_and_grad_fun


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """Gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums``.

    >>> ft.grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (Array(3., dtype=float64, weak_type=True), Array(2., dtype=float64, weak_type=True))
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_fun(*args, **kwargs):
        (ans, g) = vg(*args, **kwargs)
        return (g, ans[1]) if has_aux else g

    return grad_fun


def _std_basis(leaves):
    """Identity basis for the flattened inputs: one row per input element."""
    sizes = [get_aval(x).size for x in leaves]
    total = sum(sizes)
    if is_symbolic_dim(total):  # (shape polymorphism) the program computes the basis
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return [ops.basis_block(total, s, get_aval(x)) for x, s in zip(leaves, starts)], total
    dtype = np.result_type(*[get_aval(x).dtype for x in leaves]) if leaves else np.float64
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        a = get_aval(x)
        out.append(Array._wrap(eye[:, start:start + n].reshape((total,) + a.shape)
                               .astype(a.dtype)))
        start += n
    return out, total


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode (vmap of jvp over the input basis); output dims first.

    >>> ft.jacfwd(lambda x: x * 2.0)(fnp.ones(2))
    Array([[2., 0.],
           [0., 2.]], dtype=float64)
    """
    from ..batching import vmap
    what = f"jacfwd({fun_name(fun)})"

    def jac_fun(*args, **kwargs):
        nums = normalize_argnums(argnums, len(args), what)
        dyn = tuple(args[i] for i in nums)

        partial_fun = _with_args_at(fun, args, kwargs, nums)

        leaves, tree = tree_flatten(dyn)
        for leaf in leaves:
            a = get_aval(leaf)
            if not _is_float(a) or (_is_complex(a) and not holomorphic):
                raise TypeError(f"{what} requires floating-point inputs, got {a.str_short()}" +
                                (". " + _HOLO_HINT.format("inputs") if _is_complex(a) else ""))
        _check_holomorphic_inputs(what, leaves, holomorphic)
        basis, total = _std_basis(leaves)

        def push(*tangent_leaves):
            res = jvp(partial_fun, dyn, tree_unflatten(tree, tangent_leaves), has_aux=has_aux)
            _check_outputs(what, tree_flatten(res[1])[0], holomorphic, real_required=False)
            return (res[1], res[2]) if has_aux else res[1]

        out = vmap(push, out_axes=-1)(*basis)
        out, aux = out if has_aux else (out, None)
        jac = tree_map(lambda o: _split_last(o, leaves, tree, isinstance(argnums, int)), out)
        if has_aux:
            return jac, tree_map(lambda a: a[..., 0] if get_aval(a).ndim else a, aux)
        return jac

    return jac_fun


def _split_last(o, leaves, tree, single):
    """Reshape a trailing flat-input axis into one block per input leaf (shapes appended),
    arranged as the differentiated arguments (``tree``: the tuple of them) are: a pytree
    argument gets a pytree of blocks, as in JAX."""
    pieces, start = [], 0
    oshape = get_aval(o).shape[:-1]
    for x in leaves:
        a = get_aval(x)
        piece = o[..., start:start + a.size]
        pieces.append(piece.reshape(oshape + a.shape))
        start += a.size
    blocks = tree_unflatten(tree, pieces)
    return blocks[0] if single else blocks


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode (vmap of vjp over the output basis); output dims first.

    >>> ft.jacrev(lambda x: x * 2.0)(fnp.ones(2))
    Array([[2., 0.],
           [0., 2.]], dtype=float64)
    """
    from ..batching import vmap
    what = f"jacrev({fun_name(fun)})"

    def jac_fun(*args, **kwargs):
        nums = normalize_argnums(argnums, len(args), what)
        dyn = tuple(args[i] for i in nums)

        partial_fun = _with_args_at(fun, args, kwargs, nums)

        for leaf in tree_flatten(dyn)[0]:
            if not _is_float(get_aval(leaf)) and not allow_int:
                raise TypeError(f"{what} requires floating-point or complex inputs, got "
                                f"{get_aval(leaf).str_short()}")
        _check_holomorphic_inputs(what, tree_flatten(dyn)[0], holomorphic)
        res = vjp(partial_fun, *dyn, has_aux=has_aux)
        y, f_vjp = res[0], res[1]
        y_leaves, y_tree = tree_flatten(y)
        _check_outputs(what, y_leaves, holomorphic, real_required=True)
        basis, total = _std_basis(y_leaves)
        cts = vmap(lambda *b: f_vjp(tree_unflatten(y_tree, b)))(*basis)
        # cts: per input leaf, leading axis = flat output index
        in_leaves = [tree_flatten(c)[0] for c in cts]
        out = []
        for k, yl in enumerate(y_leaves):
            ya = get_aval(yl)
            start = sum(get_aval(v).size for v in y_leaves[:k])
            per_input = tuple(tree_unflatten(tree_structure(cts[i]), [
                leaf[start:start + ya.size].reshape(ya.shape + get_aval(leaf).shape[1:])
                for leaf in in_leaves[i]]) for i in range(len(cts)))
            out.append(per_input[0] if isinstance(argnums, int) else per_input)
        jac = tree_unflatten(y_tree, out)
        return (jac, res[2]) if has_aux else jac

    return jac_fun


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian of ``fun`` by reverse mode: JAX's name for :func:`functrans.jacrev`.

    >>> ft.jacobian(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float64)
    """
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                  allow_int=allow_int)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Second derivative matrix: ``jacfwd(jacrev(fun))``.

    >>> ft.hessian(lambda x: (x ** 3).sum())(fnp.ones(2))
    Array([[6., 0.],
           [0., 6.]], dtype=float64)
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)
