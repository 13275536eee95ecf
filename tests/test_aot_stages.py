"""Ahead-of-time stages (``jit(f).trace(...).lower().compile()``) as JAX's AOT guide uses
them; the expected values are JAX 0.10.2's."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.jit.cost import cost_analysis


def f(x, y):
    return 2 * x + y


def test_trace_gives_a_traced_with_its_jaxpr_and_lowers_and_compiles():
    traced = ft.jit(f).trace(np.int32(3), np.int32(4))
    assert isinstance(traced, ft.stages.Traced)
    assert [e.prim.name for e in traced.jaxpr.eqns] == ["mul", "add"]
    assert traced.fun_name == "f"
    compiled = traced.lower().compile()
    assert isinstance(compiled, ft.stages.Compiled)
    assert int(compiled(np.int32(3), np.int32(4))) == 10
    assert traced.out_info.shape == () and traced.out_info.dtype == np.int32
    (a, b), kw = compiled.args_info
    assert kw == {} and a.shape == () and a.dtype == np.int32 and not a.donated


def test_compiled_takes_the_dynamic_arguments_alone():
    lowered = ft.jit(f, static_argnums=0).trace(7, 8).lower()
    assert int(lowered.compile()(5)) == 19
    i32 = ft.ShapeDtypeStruct((), np.int32)
    assert int(ft.jit(f, static_argnums=0).trace(10, i32).lower().compile()(5)) == 25
    with pytest.raises(TypeError, match="structure"):
        lowered.compile()(7, 5)


@pytest.mark.parametrize("bad", [np.arange(3, dtype=np.int32), np.float32(72.0)])
def test_compiled_rejects_arguments_of_other_types(bad):
    i32 = ft.ShapeDtypeStruct((), np.int32)
    compiled = ft.jit(f).trace(i32, i32).lower().compile()
    assert int(compiled(np.int32(3), np.int32(4))) == 10
    with pytest.raises(TypeError, match="argument types differ"):
        compiled(bad, bad)


def test_donated_arguments_are_marked_in_args_info():
    traced = ft.jit(lambda a, b: a + b, donate_argnums=1).trace(1.0, 2.0)
    (a, b), _ = traced.args_info
    assert (a.donated, b.donated) == (False, True)


def test_cost_analysis_counts_flops_and_transcendentals_as_xla_does():
    # JAX 0.10.2 on CPU: f -> flops 2, bytes accessed 12; g -> flops 92, transcendentals 12
    compiled = ft.jit(f).trace(np.int32(3), np.int32(4)).lower().compile()
    cost = compiled.cost_analysis()
    assert cost["flops"] == 2.0 and cost["bytes accessed"] == 12.0
    g = lambda x: fnp.sin(x) @ x.T + x.sum()
    cost = ft.jit(g).trace(np.ones((3, 4), np.float32)).lower().cost_analysis()
    assert (cost["flops"], cost["transcendentals"]) == (92.0, 12.0)


def test_cost_analysis_multiplies_a_scan_body_by_its_length():
    def loop(x):
        return ft.lax.scan(lambda c, _: (c * 2.0 + 1.0, None), x, None, length=5)[0]
    assert cost_analysis(ft.make_jaxpr(loop)(np.ones(4)))["flops"] == 5 * 2 * 4


def test_memory_analysis_counts_arguments_and_results():
    compiled = ft.jit(f).trace(np.int32(3), np.int32(4)).lower().compile()
    stats = compiled.memory_analysis()
    assert (stats.argument_size_in_bytes, stats.output_size_in_bytes) == (8, 4)
    assert stats.alias_size_in_bytes == 0


def test_jitted_eval_shape_gives_the_results_types():
    i32 = ft.ShapeDtypeStruct((), np.int32)
    out = ft.jit(f).eval_shape(i32, i32)  # JAX: ShapeDtypeStruct(shape=(), dtype=int32)
    assert (out.shape, out.dtype) == ((), np.int32)
    out = ft.jit(lambda x, n: x[:n], static_argnums=1).eval_shape(np.ones(5, np.float32), 2)
    assert (out.shape, out.dtype) == ((2,), np.float32)
