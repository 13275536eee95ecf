"""Hijax primitives (``jax.experimental.hijax.VJPHiPrimitive``) as JAX's custom-derivatives
guide defines them; expected values are JAX 0.10.2's (and the rules' closed forms)."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental.hijax import GradAccum, VJPHiPrimitive


class SinTimesY(VJPHiPrimitive):
    def __init__(self, x_aval, y_aval):
        self.in_avals, self.out_aval, self.params = (x_aval, y_aval), x_aval, {}
        super().__init__()

    def expand(self, x, y):
        return fnp.sin(x) * y

    def vjp_fwd(self, nzs_in, x, y):
        return self(x, y), (fnp.cos(x), fnp.sin(x), y)

    def vjp_bwd_retval(self, res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    def jvp(self, primals, tangents):
        (x, y), (x_dot, y_dot) = primals, tangents
        return self(x, y), fnp.cos(x) * x_dot * y + fnp.sin(x) * y_dot


def sin_times_y(x, y):
    return SinTimesY(ft.typeof(x), ft.typeof(y))(x, y)


class ClipGradient(VJPHiPrimitive):
    """Identity forward, clipped cotangent backward (the guide's clip_gradient): the vjp rule
    must be the one used, since it differs from the implementation's derivative."""

    def __init__(self, x_aval, lo, hi):
        self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, dict(lo=lo, hi=hi)
        super().__init__()

    def expand(self, x):
        return x

    def vjp_fwd(self, nzs_in, x):
        return self(x), None

    def vjp_bwd(self, res, g, x_acc):
        x_acc.accum(fnp.clip(g, self.lo, self.hi))


def test_evaluation_jvp_and_grad_use_the_rules():
    np.testing.assert_allclose(sin_times_y(2.0, 3.0), np.sin(2.0) * 3.0)
    y, y_dot = ft.jvp(sin_times_y, (2.0, 3.0), (1.0, 0.0))
    np.testing.assert_allclose(y_dot, np.cos(2.0) * 3.0)  # JAX: -1.2484405
    np.testing.assert_allclose(ft.grad(sin_times_y)(2.0, 3.0), np.cos(2.0) * 3.0)
    np.testing.assert_allclose(ft.grad(sin_times_y, 1)(2.0, 3.0), np.sin(2.0))  # 0.9092974
    np.testing.assert_allclose(ft.jit(ft.grad(sin_times_y))(2.0, 3.0), np.cos(2.0) * 3.0)


def test_vmap_batches_the_implementation_and_rules():
    xs = np.arange(3.0)
    got = ft.vmap(ft.grad(sin_times_y))(xs, np.ones(3))
    np.testing.assert_allclose(got, np.cos(xs))  # JAX with a batch rule: [1, .54, -.416]


def test_vjp_bwd_with_accumulators_is_the_rule_grad_uses():
    clip = lambda x: ClipGradient(ft.typeof(x), -0.75, 0.75)(x)
    f = lambda x: fnp.sin(clip(x)) * 3.0
    assert float(clip(2.0)) == 2.0
    np.testing.assert_allclose(ft.grad(f)(0.0), 0.75)  # cotangent 3.0 clipped to 0.75
    np.testing.assert_allclose(ft.grad(f)(2.0), np.clip(3.0 * np.cos(2.0), -0.75, 0.75))
    assert ClipGradient(ft.typeof(1.0), -1, 1).lo == -1  # params read as attributes


def test_missing_rules_and_fields_raise():
    class NoRules(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval, self.params = (aval,), aval, {}
            super().__init__()

        def expand(self, x):
            return x * 2.0

    f = lambda x: NoRules(ft.typeof(x))(x)
    assert float(f(1.5)) == 3.0 and float(ft.jit(f)(1.5)) == 3.0
    with pytest.raises(NotImplementedError, match="must implement"):
        ft.grad(f)(1.0)

    class Unset(VJPHiPrimitive):
        def __init__(self):
            super().__init__()

    with pytest.raises(AttributeError, match="in_avals"):
        Unset()
    with pytest.raises(TypeError, match="structure"):
        NoRules(ft.typeof(1.0))(1.0, 2.0)
    assert issubclass(ft.experimental.hijax.ValAccum, GradAccum)


def test_lin_and_linearized_give_forward_mode_and_reverse_mode():
    class Sin(VJPHiPrimitive):
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
            super().__init__()

        def expand(self, x):
            return fnp.sin(x)

        def lin(self, nzs_in, x):
            return self(x), fnp.cos(x)

        def linearized(self, cos_x, x_dot):
            return cos_x * x_dot

    sin = lambda x: Sin(ft.typeof(x))(x)
    y, f_lin = ft.linearize(sin, 3.0)
    np.testing.assert_allclose(y, np.sin(3.0))
    np.testing.assert_allclose(f_lin(1.0), np.cos(3.0))  # JAX: -0.9899925
    np.testing.assert_allclose(ft.grad(sin)(3.0), np.cos(3.0))


def test_eager_grad_runs_expand_and_rules_on_concrete_values():
    class G(VJPHiPrimitive):  # JAX's custom-derivatives guide: grad(g)(1.) == 2, (-1.) == 3
        def __init__(self, x_aval):
            self.in_avals, self.out_aval, self.params = (x_aval,), x_aval, {}
            super().__init__()

        def expand(self, x):
            return fnp.sin(x) if x > 0 else fnp.cos(x)

        def vjp_fwd(self, nzs_in, x):
            return self(x), x

        def vjp_bwd_retval(self, x, g):
            return ((2 if x > 0 else 3) * g,)

    g = lambda x: G(ft.typeof(x))(x)
    assert float(ft.grad(g)(1.0)) == 2.0 and float(ft.grad(g)(-1.0)) == 3.0


def test_typeof_gives_a_registered_high_level_types_aval():
    from functrans.experimental.hijax import HiType, register_hitype

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class PairTy(HiType):
        def __init__(self, shape):
            self.shape = shape

    register_hitype(Pair, lambda p: PairTy(ft.typeof(p.a).shape))
    t = ft.typeof(Pair(fnp.ones(3), fnp.zeros(3)))
    assert isinstance(t, PairTy) and t.shape == (3,)
