"""``axis_index_groups`` of psum / pmean / pmax / pmin (haiku's cross-replica BatchNorm passes
it): each member reduces over its own group. The oracle is a Python loop over the members and
groups; derivatives are checked with central differences."""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
from functrans import lax
from finite_diff import fd_grad

GROUPS = [[0, 3], [1, 2], [4, 5]]


def _oracle(reduce, x, groups):
    out = np.empty_like(x)
    for g in groups:
        out[g] = reduce(x[g], axis=0)
    return out


@pytest.mark.parametrize("name,reduce", [("psum", np.sum), ("pmean", np.mean),
                                         ("pmax", np.max), ("pmin", np.min)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_grouped_collectives_match_a_loop_over_the_groups(name, reduce, dtype):
    if name == "pmean" and dtype == np.int32:
        dtype = np.float64  # pmean of ints is a float mean; checked on floats
    x = np.random.default_rng(0).integers(-9, 9, (6, 2, 3)).astype(dtype)
    fn = getattr(lax, name)
    got = ft.vmap(lambda v: fn(v, "i", axis_index_groups=GROUPS), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(got), _oracle(reduce, x, GROUPS), rtol=1e-6)
    assert np.asarray(got).dtype == dtype
    jitted = ft.jit(ft.vmap(lambda v: fn(v, "i", axis_index_groups=GROUPS), axis_name="i"))
    np.testing.assert_allclose(np.asarray(jitted(x)), _oracle(reduce, x, GROUPS), rtol=1e-6)


def test_grouped_psum_gradient_matches_finite_differences():
    # Each output is a sum over its group, weighted: linear, so central differences are
    # exact up to rounding (eps * |f| / h, |f| ~ 10: 1e-9).
    x = np.random.default_rng(1).normal(size=(6, 2))
    w = np.linspace(-1.0, 1.0, 12).reshape(6, 2)

    def loss(v):
        s = ft.vmap(lambda r: lax.psum(r, "i", axis_index_groups=GROUPS), axis_name="i")(v)
        return (s * w).sum()

    want = fd_grad(lambda v: (_oracle(np.sum, v, GROUPS) * w).sum(), x)
    np.testing.assert_allclose(np.asarray(ft.grad(loss)(x)), want, atol=1e-8)


def test_bad_groups_are_clear_errors():
    run = lambda groups: ft.vmap(lambda v: lax.psum(v, "i", axis_index_groups=groups),  # noqa
                                 axis_name="i")(np.ones(4))
    with pytest.raises(ValueError, match="exactly once"):
        run([[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="same size"):
        run([[0, 1, 2], [3]])
    with pytest.raises(TypeError, match="lists of ints"):
        run([[0.5, 1], [2, 3]])
    # None is the whole axis, as without the argument
    assert ft.vmap(lambda v: lax.pmean(v, "i", axis_index_groups=None),
                   axis_name="i")(np.arange(4.0)).tolist() == [1.5] * 4
