"""The core: jaxpr text (golden strings from JAX), the type checker, make_jaxpr/eval_shape with
pytrees and static arguments, the primitive set's type rules against their impls, and the
errors for tracers used where they cannot be (concretization, leaks, unsupported dtypes).

The golden strings are what ``jax.make_jaxpr`` prints for the same functions, less the
``out_sharding``/``sharding`` params that functrans does not have.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.avals import ShapedArray
from functrans.core.check import JaxprTypeError
from functrans.core.ir import Eqn, Jaxpr, Literal, Var
from functrans.core.trace import all_primitives

from primitive_coverage import COLLECTIVES, TESTED_ELSEWHERE

F32 = np.float32

# ---- printer ---------------------------------------------------------------------------------

GOLDEN = {
    "sin_mul": (
        lambda x: fnp.sin(x) * 2.0, (np.ones(3, F32),),
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }"),
    "pytree_out": (
        lambda x, y: (x + y, {"a": x * y}), (np.ones(2, np.int32), np.ones(2, np.int32)),
        "{ lambda ; a:i32[2] b:i32[2]. let\n"
        "    c:i32[2] = add a b\n"
        "    d:i32[2] = mul a b\n"
        "  in (c, d) }"),
    "closure_const": (
        lambda x: x + np.arange(3.0, dtype=F32), (np.ones(3, F32),),
        "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"),
    "params": (
        lambda x: x.astype(F32) + 1, (np.ones(3, np.int32),),
        "{ lambda ; a:i32[3]. let\n"
        "    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    c:f32[3] = add b 1.0:f32[]\n"
        "  in (c,) }"),
    "nested_branches": (
        lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v * 2.0, x),
        (np.bool_(True), np.ones(3, F32)),
        "{ lambda ; a:bool[] b:f32[3]. let\n"
        "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "    d:f32[3] = cond[\n"
        "      branches=(\n"
        "        { lambda ; e:f32[3]. let f:f32[3] = mul e 2.0:f32[] in (f,) }\n"
        "        { lambda ; g:f32[3]. let h:f32[3] = add g 1.0:f32[] in (h,) }\n"
        "      )\n"
        "    ] c b\n"
        "  in (d,) }"),
    "nested_scan": (
        lambda x: lax.scan(lambda c, v: (c + v, c * v), F32(0), x), (np.ones(3, F32),),
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[] c:f32[3] = scan[\n"
        "      jaxpr={ lambda ; d:f32[] e:f32[]. let\n"
        "          f:f32[] = add d e\n"
        "          g:f32[] = mul d e\n"
        "        in (f, g) }\n"
        "      length=3\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "    ] 0.0:f32[] a\n"
        "  in (b, c) }"),
    "unused_output": (
        ft.grad(lambda x: fnp.sum(fnp.sin(x) ** 2)), (np.ones(3, F32),),
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = cos a\n"
        "    d:f32[3] = integer_pow[y=2] b\n"
        "    e:f32[3] = mul 2.0:f32[] b\n"
        "    _:f32[] = reduce_sum[axes=(0,)] d\n"
        "    f:f32[3] = broadcast_in_dim 1.0:f32[]\n"
        "    g:f32[3] = mul f e\n"
        "    h:f32[3] = mul g c\n"
        "  in (h,) }"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_printer_matches_jax_text(name):
    f, args, want = GOLDEN[name]
    jaxpr = ft.make_jaxpr(f)(*args)
    assert str(jaxpr) == want
    ft.check_jaxpr(jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr)


def test_variable_names_continue_past_z():
    def chain(x):
        for _ in range(30):
            x = fnp.sin(x)
        return x
    lines = str(ft.make_jaxpr(chain)(F32(1))).splitlines()
    assert lines[0] == "{ lambda ; a:f32[]. let"
    assert lines[26] == "    ba:f32[] = sin z"
    assert lines[-1] == "  in (be,) }"
    assert all(len(line) <= 80 for line in lines)


def test_jaxpr_displays_in_jupyter():
    jaxpr = ft.make_jaxpr(lambda x: x < 1)(F32(0))
    html = jaxpr._repr_html_()
    assert "<pre" in html and "lt a 1.0:f32[]" in html
    assert "&lt;" not in str(jaxpr) and "<" not in html.replace("<pre", "").replace("</pre>", "") \
        .replace(">", "")  # the text is escaped, so `lt`'s operands cannot break the markup


# ---- check_jaxpr -----------------------------------------------------------------------------

def _eqn(prim, ins, outs, **params):
    return Eqn(prim, ins, outs, params, None)


def test_check_jaxpr_accepts_traced_programs():
    ft.check_jaxpr(ft.make_jaxpr(lambda x, y: fnp.dot(x, y) + 1)(np.ones((2, 3)), np.ones(3)))


def test_check_jaxpr_rejects_use_before_definition():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32))
    prim = _prim("sin")
    bad = Jaxpr([], [], [a], [a], [_eqn(prim, [b], [a])])
    with pytest.raises(JaxprTypeError, match="used before it is defined"):
        ft.check_jaxpr(bad)


def test_check_jaxpr_rejects_double_binding():
    a = Var(ShapedArray((3,), F32))
    bad = Jaxpr([], [], [a], [a], [_eqn(_prim("sin"), [a], [a])])
    with pytest.raises(JaxprTypeError, match="bound twice"):
        ft.check_jaxpr(bad)


def test_check_jaxpr_rejects_wrong_output_type():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), np.dtype(np.float64)))
    bad = Jaxpr([], [], [a], [b], [_eqn(_prim("sin"), [a], [b])])
    with pytest.raises(JaxprTypeError, match=r"f64\[3\] does not match the type rule's f32\[3\]"):
        ft.check_jaxpr(bad)


def test_check_jaxpr_rejects_ill_typed_equation():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((2,), F32))
    c = Var(ShapedArray((3,), F32))
    bad = Jaxpr([], [], [a, b], [c], [_eqn(_prim("add"), [a, b], [c])])
    with pytest.raises(JaxprTypeError, match=r"add.*f32\[3\].*f32\[2\]"):
        ft.check_jaxpr(bad)


def test_check_jaxpr_rejects_non_scalar_literal_and_bad_const():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32))
    lit = Literal(np.ones(3, F32), ShapedArray((3,), F32))
    with pytest.raises(JaxprTypeError, match="literal"):
        ft.check_jaxpr(Jaxpr([], [], [a], [b], [_eqn(_prim("add"), [a, lit], [b])]))
    k = Var(ShapedArray((3,), F32))
    with pytest.raises(JaxprTypeError, match="const of type"):
        ft.check_jaxpr(Jaxpr([k], [np.ones(4, F32)], [a], [a], []))


def test_check_jaxpr_checks_inside_sub_jaxprs():
    jaxpr = ft.make_jaxpr(lambda p, x: lax.cond(p, lambda v: v + 1.0, lambda v: v, x))(
        True, np.ones(3, F32))
    cond = jaxpr.eqns[-1]
    branch = cond.params["branches"][0]
    v = Var(ShapedArray((3,), F32))
    broken = branch.replace(outvars=[v])  # an output that nothing defines
    bad = jaxpr.replace(eqns=[*jaxpr.eqns[:-1], cond.replace(
        params={**cond.params, "branches": (broken, *cond.params["branches"][1:])})])
    with pytest.raises(JaxprTypeError, match="used before it is defined"):
        ft.check_jaxpr(bad)


# ---- make_jaxpr / eval_shape -----------------------------------------------------------------

class Point(NamedTuple):
    x: object
    y: object


@dataclasses.dataclass
class Params:
    w: object
    b: object


ft.tree_util.register_dataclass(Params, data_fields=["w", "b"], meta_fields=[])


def test_make_jaxpr_takes_and_returns_pytrees():
    def f(p: Point, params: Params, none):
        assert none is None
        return {"out": p.x * params.w + params.b, "pair": (p.y, None)}
    jaxpr = ft.make_jaxpr(f)(Point(np.ones(2), np.zeros(3)), Params(np.ones(2), 1.0), None)
    assert [repr(v.aval) for v in jaxpr.invars] == [
        "ShapedArray(f64[2])", "ShapedArray(f64[3])", "ShapedArray(f64[2])",
        "ShapedArray(f64[], weak_type=True)"]
    assert len(jaxpr.outvars) == 2
    out = ft.eval_jaxpr(jaxpr, np.ones(2), np.zeros(3), np.full(2, 2.0), 1.0)
    np.testing.assert_array_equal(out[0], [3.0, 3.0])


def test_make_jaxpr_static_argnums_and_return_shape():
    def f(x, n):
        return x ** n if n > 1 else x
    jaxpr, shape = ft.make_jaxpr(f, static_argnums=1, return_shape=True)(np.ones(3, F32), 3)
    assert "integer_pow[y=3]" in str(jaxpr)
    assert (shape.shape, shape.dtype) == ((3,), np.dtype(F32))


def test_make_jaxpr_axis_env_binds_names_for_collectives():
    # JAX's make_jaxpr(f, axis_env=[("i", 4)]) stages psum and axis_index over an axis no
    # transformation binds (haiku's jaxpr_info passes it); the sizes reach the collectives.
    f = lambda x: ft.lax.psum(x, "i") * ft.lax.axis_size("i") + ft.lax.axis_index("i")  # noqa
    jaxpr = ft.make_jaxpr(f, axis_env=[("i", 4)])(np.float32(1.0))
    names = [e.prim.name for e in jaxpr.eqns]
    assert "psum" in names and "axis_index" in names
    assert "4.0" in str(jaxpr)  # axis_size("i") is the static 4
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        ft.make_jaxpr(f)(np.float32(1.0))
    with pytest.raises(TypeError, match="pairs"):
        ft.make_jaxpr(f, axis_env=["i"])(1.0)
    with pytest.raises(TypeError, match="integer"):
        ft.make_jaxpr(f, axis_env=[("i", 2.5)])(1.0)


def test_named_scopes_are_recorded_on_the_equations_made_inside():
    # JAX's eqn.source_info.name_stack: the open named_scope / named_call names joined by "/"
    # (haiku's jaxpr_info groups a model's operations by module with it); empty outside.
    dense = ft.named_call(lambda x: x * 2.0, name="dense")

    def f(x):
        with ft.named_scope("block"):
            y = fnp.sin(x)
            y = dense(y)
        return y + 1.0

    jaxpr = ft.make_jaxpr(f)(1.0)
    assert [(e.prim.name, str(e.source_info.name_stack)) for e in jaxpr.eqns] == [
        ("sin", "block"), ("mul", "block/dense"), ("add", "")]
    from functrans.core import name_stack
    assert str(name_stack.current()) == ""  # closed again
    with pytest.raises(TypeError, match="must be a string"):
        with ft.named_scope(3):
            pass


def test_differentiation_names_the_scopes_jvp_and_transpose_as_jax():
    # The expected stacks are JAX 0.10.2's for the same programs (haiku's jaxpr_info test of
    # a model's gradient reads them): the forward pass wraps the scopes open inside it in
    # jvp(...), the backward pass in transpose(jvp(...)); scopes open around grad stay outside.
    def loss(w, x):
        with ft.named_scope("model"):
            with ft.named_scope("dense"):
                y = fnp.sin(w * x)
        return fnp.sum(y)

    def stacks(f, *args):
        return [(e.prim.name, str(e.source_info.name_stack))
                for e in ft.make_jaxpr(f)(*args).eqns]

    w = x = fnp.ones(3)
    assert stacks(ft.grad(loss), w, x) == [
        ("mul", "jvp(model)/dense"), ("sin", "jvp(model)/dense"), ("cos", "jvp(model)/dense"),
        ("reduce_sum", "jvp()"), ("broadcast_in_dim", "transpose(jvp())"),
        ("mul", "transpose(jvp(model))/dense"), ("mul", "transpose(jvp(model))/dense")]

    def outer(w, x):
        with ft.named_scope("outer"):
            return ft.grad(loss)(w, x)
    assert stacks(outer, w, x) == [
        ("mul", "outer/jvp(model)/dense"), ("sin", "outer/jvp(model)/dense"),
        ("cos", "outer/jvp(model)/dense"), ("reduce_sum", "outer/jvp()"),
        ("broadcast_in_dim", "outer/transpose(jvp())"),
        ("mul", "outer/transpose(jvp(model))/dense"),
        ("mul", "outer/transpose(jvp(model))/dense")]

    def fwd(w, x):
        return ft.jvp(lambda w: loss(w, x), (w,), (w,))
    assert [s for _, s in stacks(fwd, w, x)] == ["jvp(model)/dense"] * 5 + ["jvp()"] * 2


def test_eval_shape_runs_nothing():
    calls = []

    def f(x, y):
        calls.append(type(x))
        return {"z": fnp.dot(x, y), "s": fnp.sum(x)}
    out = ft.eval_shape(f, ft.ShapeDtypeStruct((4, 5), F32), np.ones(5, F32))
    assert out["z"].shape == (4,) and out["z"].dtype == np.float32
    assert out["s"].shape == () and calls and not issubclass(calls[0], (np.ndarray, ft.Array))


def test_eval_shape_passes_shape_dtype_struct_outputs_through():
    # As JAX's: a ShapeDtypeStruct the function returns (equinox's filter_eval_shape returns
    # its struct inputs) comes back as it is, in its place among the traced outputs.
    s = ft.ShapeDtypeStruct((3,), F32)
    out = ft.eval_shape(lambda x: (x * 2, s, x.sum()), np.ones(2, F32))
    assert out[1] is s
    assert (out[0].shape, out[2].shape) == ((2,), ()) and out[0].dtype == np.float32
    with pytest.raises(TypeError, match="outputs must be arrays"):
        ft.make_jaxpr(lambda x: s)(1.0)  # only eval_shape has no values to compute


def test_eval_shape_and_make_jaxpr_take_avals_and_objects_with_shape_and_dtype():
    # as JAX's shaped_abstractify (jax-md probes a function's dimension with ShapedArrays)
    from functrans.core.avals import ShapedArray

    class Spec:
        shape, dtype = (2, 3), np.dtype("float32")

    out = ft.eval_shape(lambda a, b, t: a.sum(0) + b[0] + t, ShapedArray((3,), F32), Spec(),
                        t=ShapedArray((), F32, weak_type=True))
    assert out.shape == (3,) and out.dtype == np.float32
    assert ft.make_jaxpr(lambda a: a * 2)(Spec()).in_avals[0] == ShapedArray((2, 3), F32)
    with pytest.raises(TypeError, match="argument leaf 0"):
        ft.eval_shape(lambda a: a, object())
    with pytest.raises(TypeError, match="not an array"):
        ft.jit(lambda a: a)(ShapedArray((3,), F32))


def test_tracers_carry_their_aval_and_concrete_value_when_known():
    seen = {}

    def f(x):
        seen["aval"] = x.aval.str_short()
        return x
    ft.make_jaxpr(f)(np.ones((2, 2), np.int16))
    assert seen["aval"] == "i16[2,2]"
    # grad's tracers wrap concrete values, so Python control flow on them works (as in JAX)...
    assert ft.grad(lambda x: x * x if x > 0 else -x)(3.0) == 6.0
    assert ft.grad(lambda x: x * x if x > 0 else -x)(-3.0) == -1.0
    # ...while under make_jaxpr the value is abstract.
    with pytest.raises(ft.ConcretizationTypeError):
        ft.make_jaxpr(ft.grad(lambda x: x * x if x > 0 else -x))(3.0)


# ---- every primitive's type rule against its impl --------------------------------------------

def _all_primitives():
    return all_primitives()


def _prim(name):
    return _all_primitives()[name]


def _aval(x):
    x = np.asarray(x)
    return ShapedArray(x.shape, x.dtype)


_f = np.linspace(0.1, 0.9, 6, dtype=F32).reshape(2, 3)
_i = np.arange(6, dtype=np.int32).reshape(2, 3)
_b = _i % 2 == 0
_u = _i.astype(np.uint32)

_WINDOW = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)),
               base_dilation=(1, 2), window_dilation=(2, 1))
# name -> (operands, params). Elementwise ones get defaults below.
STRUCTURAL = {
    "broadcast_in_dim": ([_f], dict(shape=(4, 2, 3), broadcast_dimensions=(1, 2))),
    "concatenate": ([_f, _f], dict(dimension=1)),
    "dot_general": ([_f, _f.T.copy()], dict(dimension_numbers=(((1,), (0,)), ((), ())),
                                            precision=None, preferred_element_type=None)),
    "dynamic_slice": ([_f, np.int32(1), np.int32(1)], dict(slice_sizes=(1, 2))),
    "dynamic_update_slice": ([_f, _f[:1, :2].copy(), np.int32(1), np.int32(0)], {}),
    "iota": ([], dict(dtype=np.dtype(np.int32), shape=(2, 3), dimension=1)),
    "pad": ([_f, F32(0)], dict(padding_config=((1, 0, 1), (0, 2, 0)))),
    "reshape": ([_f], dict(new_sizes=(3, 2))),
    "rev": ([_f], dict(dimensions=(0,))),
    "slice": ([_f], dict(start_indices=(0, 1), limit_indices=(2, 3), strides=(1, 2))),
    "squeeze": ([_f[:1]], dict(dimensions=(0,))),
    "transpose": ([_f], dict(permutation=(1, 0))),
    "sort": ([_f, _i], dict(dimension=1, is_stable=True, num_keys=1)),
    "fft": ([_f], dict(fft_type="RFFT", fft_lengths=(3,))),
    "argmax": ([_f], dict(axes=(1,), index_dtype=np.dtype(np.int32))),
    "argmin": ([_f], dict(axes=(0,), index_dtype=np.dtype(np.int64))),
    "reduce_sum": ([_f], dict(axes=(0, 1))),
    "reduce_prod": ([_i], dict(axes=(1,))),
    "reduce_max": ([_f], dict(axes=(0,))),
    "reduce_min": ([_u], dict(axes=(1,))),
    "reduce_and": ([_b], dict(axes=(0,))),
    "reduce_or": ([_b], dict(axes=(1,))),
    "conv_general_dilated": ([_f.reshape(1, 2, 3), np.ones((4, 1, 2), F32)], dict(
        window_strides=(2,), padding=((1, 2),), lhs_dilation=(2,), rhs_dilation=(1,),
        dimension_numbers=((0, 1, 2), (0, 1, 2), (0, 2, 1)), feature_group_count=2,
        batch_group_count=1, precision=None, preferred_element_type=np.dtype(np.float64))),
    "reduce_window_sum": ([_i], _WINDOW),
    "reduce_window_max": ([_f], _WINDOW),
    "reduce_window_min": ([_u], _WINDOW),
    "select_and_gather_add": ([np.ones((2, 3), F32), _f], dict(select_prim="ge", **_WINDOW)),
    "select_and_scatter_add": ([np.ones((1, 3), F32), _f], dict(select_prim="le", **_WINDOW)),
    "cumsum": ([_i], dict(axis=1, reverse=False)),
    "cumprod": ([_f], dict(axis=0, reverse=True)),
    "cummax": ([_f], dict(axis=1, reverse=False)),
    "cummin": ([_i], dict(axis=0, reverse=False)),
    "cumlogsumexp": ([_f], dict(axis=1, reverse=False)),
    "cholesky": ([_f @ _f.T + np.eye(2, dtype=F32)], {}),
    "triangular_solve": ([np.tril(_f[:, :2]) + np.eye(2, dtype=F32), _f],
                         dict(left_side=True, lower=True, transpose_a=False, unit_diagonal=False)),
    "lu": ([_f], {}),
    "tridiagonal_solve": ([np.array([0, 1], F32), np.array([2, 2], F32), np.array([1, 0], F32),
                           _f[:, :2]], {}),
    "qr": ([_f], dict(full_matrices=True)),
    "eigh": ([_f @ _f.T], dict(lower=True)),
    "svd": ([_f], dict(full_matrices=False, compute_uv=True)),
    "eig": ([_f @ _f.T + np.array([[0, 1], [-1, 0]], F32)],
            dict(compute_left_eigenvectors=True, compute_right_eigenvectors=True)),
}
ELEMENTWISE_PARAMS = {
    "integer_pow": dict(y=3),
    "convert_element_type": dict(new_dtype=np.dtype(np.int16), weak_type=False),
    "bitcast_convert_type": dict(new_dtype=np.dtype(np.int32)),
    "round": dict(rounding_method=0),
}
ELEMENTWISE_ARGS = {  # operands that are in the primitive's domain
    "acosh": [_f + 1], "polygamma": [np.full((2, 3), 1, F32), _f], "zeta": [_f + 2, _f],
    "select_n": [_b, _f, _f], "fma": [_f, _f, _f],
    "shift_left": [_i, _i], "shift_right_arithmetic": [_i, _i], "shift_right_logical": [_u, _u],
    "and": [_i, _i], "or": [_b, _b], "xor": [_u, _u], "not": [_i], "population_count": [_u],
    "rem": [_i + 1, _i + 1],
    "real": [_f * (1 + 2j)], "imag": [_f * (1 + 2j)], "conj": [_f * (1 + 2j)],
}
# Primitives whose behaviour is a sub-program: their type rules are checked on every traced
# program by check_jaxpr (the suite enables it), their evaluation in their own tests.
# Collectives only have a meaning under a named axis (vmap/pmap): no impl outside one.
HIGHER_ORDER = set(TESTED_ELSEWHERE)
INDEXING = {"gather", "scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max"}


def _example(name, prim):
    if name in STRUCTURAL:
        return STRUCTURAL[name]
    params = ELEMENTWISE_PARAMS.get(name, {})
    if name in ELEMENTWISE_ARGS:
        return ELEMENTWISE_ARGS[name], params
    for arity in (1, 2):
        try:
            prim.abstract_eval(*[_aval(_f)] * arity, **params)
            return [_f] * arity, params
        except TypeError:
            continue
    raise AssertionError(f"no example operands for {name}")


def test_every_primitive_has_a_type_rule_check():
    names = set(_all_primitives())
    covered = set(STRUCTURAL) | HIGHER_ORDER | COLLECTIVES | INDEXING | {
        n for n, p in _all_primitives().items() if "elementwise" in p.traits}
    assert names <= covered, f"primitives without an example: {sorted(names - covered)}"


@pytest.mark.parametrize("name", sorted(set(_all_primitives()) - HIGHER_ORDER - COLLECTIVES
                                         - INDEXING))
def test_type_rule_matches_impl(name):
    prim = _all_primitives()[name]
    args, params = _example(name, prim)
    want = prim.abstract_eval(*[_aval(a) for a in args], **params)
    with np.errstate(all="ignore"):
        got = prim.impl(*[np.asarray(a) for a in args], **params)
    assert [(np.shape(g), np.asarray(g).dtype) for g in got] == \
        [(tuple(w.shape), w.dtype) for w in want]


@pytest.mark.parametrize("name", sorted(set(_all_primitives()) - HIGHER_ORDER - COLLECTIVES
                                         - INDEXING))
def test_bind_returns_one_output_unless_multiple_results(name):
    # JAX's convention: the list of outputs only for a multiple_results primitive; a
    # single-result primitive's type rule gives exactly one output.
    prim = _all_primitives()[name]
    args, params = _example(name, prim)
    n_out = len(prim.abstract_eval(*[_aval(a) for a in args], **params))
    with np.errstate(all="ignore"):
        out, outs = prim.bind(*args, **params), prim.bind_all(*args, **params)
    assert len(outs) == n_out
    if prim.multiple_results:
        assert type(out) is list and len(out) == n_out
    else:
        assert n_out == 1 and not isinstance(out, (list, tuple))
        np.testing.assert_array_equal(out, outs[0])


# JAX 0.10.2's primitives with multiple_results among functrans's (by name; its checkpoint is
# JAX's remat2). psum differs on purpose: functrans's lax.psum sums all leaves in one
# equation (JAX binds one psum per leaf).
JAX_MULTIPLE_RESULTS = {
    "check", "cond", "custom_jvp_call", "custom_lin", "custom_linear_solve", "custom_vjp_call",
    "custom_vmap_call", "debug_callback", "eig", "eigh", "io_callback", "jit", "lu",
    "pure_callback", "qr", "reduce", "scan", "shard_map", "sort", "svd", "while", "checkpoint"}


def test_multiple_results_are_jaxs():
    import functrans.experimental.checkify  # noqa: F401  (defines check)
    marked = {n for n, p in _all_primitives().items() if p.multiple_results}
    assert marked - {"psum", "numba_call"} == JAX_MULTIPLE_RESULTS
    # numba_call: a user's kernel with any number of outputs
    assert {"psum", "numba_call"} <= marked


def test_bind_of_a_single_result_primitive_with_several_outputs_raises():
    from functrans.core.trace import Primitive
    two = Primitive("two_copies", impl=lambda x: [x, x], abstract_eval=lambda a: [a, a],
                    register=False)
    assert len(two.bind_all(1.0)) == 2
    with pytest.raises(TypeError, match="two_copies.bind gave 2 outputs.*use bind_all"):
        two.bind(1.0)


@pytest.mark.parametrize("index", [
    (np.array([1, 0, 1]),), (slice(None), np.array([[0, 2]])), (np.array([2, 0]), np.array([1, 3])),
    (Ellipsis, np.array([3, 3, 0]))])
def test_gather_and_scatter_type_rules_match_impls(index):
    x = fnp.asarray(np.arange(12.0).reshape(3, 4).astype(F32))
    for f in (lambda a: a[index], lambda a: a.at[index].add(1.0),
              lambda a: a.at[index].max(2.0), lambda a: a.at[index].set(0.0),
              lambda a: a.at[index].mul(3.0), lambda a: a.at[index].min(-1.0)):
        jaxpr = ft.make_jaxpr(f)(x)
        assert {e.prim.name for e in jaxpr.eqns} & INDEXING
        # eval_jaxpr runs each impl, which test runs check against the type rule.
        np.testing.assert_array_equal(ft.eval_jaxpr(jaxpr, x)[0], f(x))


# ---- errors at the user's call ---------------------------------------------------------------

def test_python_branch_on_tracer_names_the_line_and_the_fix():
    def f(x):
        if x > 0:  # the line the error must name
            return x
        return -x
    with pytest.raises(ft.ConcretizationTypeError) as e:
        ft.make_jaxpr(f)(1.0)
    msg = str(e.value)
    assert "test_core.py:" in msg and "(in f)" in msg
    line = int(msg.split("test_core.py:")[1].split()[0])
    assert "if x > 0" in open(__file__).read().splitlines()[line - 1]
    assert "lax.cond" in msg and "fnp.where" in msg


def test_int_and_float_of_tracer_raise_concretization_errors():
    for conv in (int, float, bool, lambda t: range(t)):
        with pytest.raises(ft.ConcretizationTypeError, match="f64"):
            ft.make_jaxpr(lambda x: conv(x))(1.0)


def test_leaked_tracer_raises_when_used():
    box = []

    def f(x):
        box.append(x * 2)
        return x
    ft.make_jaxpr(f)(1.0)
    with pytest.raises(ft.UnexpectedTracerError, match="leaked tracer f64"):
        fnp.sin(box[0])
    with pytest.raises(ft.UnexpectedTracerError, match="already finished"):
        ft.jit(lambda y: y + box[0])(1.0)


def test_shape_mismatch_names_the_shapes():
    with pytest.raises(ValueError, match=r"fnp.add: .* shapes \(2, 3\) \(4,\)"):
        fnp.ones((2, 3)) + fnp.ones(4)
    # A product of mismatched shapes is a TypeError naming the contracted sizes, as JAX's.
    with pytest.raises(TypeError, match=r"contracting dimensions to have the same shape, "
                                        r"got \(3,\) and \(2,\)"):
        ft.make_jaxpr(lambda a, b: a @ b)(np.ones((2, 3)), np.ones((2, 3)))


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([object(), 1], dtype=object),
                                 np.array([b"x"]), np.array(["2020-01-01"], "datetime64[D]")])
def test_unsupported_dtypes_are_rejected_clearly(bad):
    with pytest.raises(TypeError, match=str(bad.dtype).replace("[", r"\[")):
        fnp.asarray(bad)
    with pytest.raises(TypeError, match="dtype"):
        ft.make_jaxpr(lambda x: x)(bad)


def test_x64_disabled_canonicalizes_to_32_bits():
    with ft.config.override(enable_x64=False):
        assert fnp.ones(3).dtype == np.float32
        assert fnp.arange(3).dtype == np.int32
        assert fnp.asarray(np.ones(2, np.float64)).dtype == np.float32
        jaxpr = ft.make_jaxpr(lambda x: x * 2)(np.ones(2))
        assert str(jaxpr) == "{ lambda ; a:f32[2]. let b:f32[2] = mul a 2.0:f32[] in (b,) }"
    assert fnp.ones(3).dtype == np.float64


def test_array_is_immutable_and_converts_without_copying():
    a = fnp.arange(4.0)
    with pytest.raises(TypeError, match="immutable|at\\["):
        a[0] = 1.0
    v = np.asarray(a)
    assert np.shares_memory(v, np.asarray(a)) and not v.flags.writeable
    assert repr(a) == "Array([0., 1., 2., 3.], dtype=float64)"
    np.testing.assert_array_equal(a.at[1].set(9.0), [0, 9, 2, 3])


def test_weak_types_survive_transformations_as_in_jax():
    """A Python scalar in gives a weakly typed result out, through every interpreter, so it
    promotes the same way afterwards (float32 + weak float64 stays float32)."""
    x32 = np.ones(2, F32)

    def weak(a):
        assert isinstance(a, ft.Array) and a.weak_type, repr(a)
        assert (a + x32).dtype == np.float32

    weak(ft.grad(lambda x: x * x)(3.0))
    weak(ft.jit(ft.grad(lambda x: x * x))(3.0))
    weak(ft.jit(lambda x: x * 2)(3.0))
    weak(ft.vjp(lambda x: x * 2, 1.0)[1](1.0)[0])
    weak(lax.cond(True, lambda v: v + 1, lambda v: v - 1, 10.0))
    weak(ft.eval_jaxpr(ft.make_jaxpr(lambda v: v * 2)(3.0), 4.0)[0])
    strong = ft.grad(lambda x: x * x)(np.float64(3.0))
    assert not strong.weak_type and (strong + x32).dtype == np.float64
