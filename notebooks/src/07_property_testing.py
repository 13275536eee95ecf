# %% [markdown]
# # 7. Property-testing your functions
#
# A function written with `functrans.numpy` has several ways to run: eagerly, traced
# (`make_jaxpr` then `eval_jaxpr`), compiled (`jit`), batched (`vmap`), differentiated. They
# should agree, with each other and with a NumPy reference. `ft.testing` packages the checks
# and [hypothesis](https://hypothesis.readthedocs.io) strategies for arrays, dtypes and shapes,
# so a few lines test a function on hundreds of generated inputs, and hypothesis shrinks any
# failure to a minimal example.

# %%
import numpy as np
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing

# %% [markdown]
# ## Strategies
#
# `testing.arrays` draws arrays of a dtype strategy and shape; `shapes`, `float_dtypes`,
# `axes` and friends cover the rest. Draw a few to see what they produce:

# %%
strategy = testing.arrays(dtypes=testing.float_dtypes(), shape=testing.shapes(max_dims=2))
for _ in range(4):
    a = strategy.example()
    print(a.dtype, a.shape)

# %% [markdown]
# ## Against a NumPy oracle: `check_against`
#
# `check_against(fn, oracle, *args)` runs `fn` eagerly and traced and compares both with the
# oracle's NumPy result: shape, dtype and values (exactly, or within `ulps`/`atol`). Here a
# numerically stable `logsumexp` is tested against a naive NumPy one on moderate inputs (the
# naive one overflows on large inputs, which the stable one does not).

# %%
def logsumexp(x):
    m = fnp.max(x, axis=-1, keepdims=True)
    return fnp.log(fnp.sum(fnp.exp(x - m), axis=-1)) + m[..., 0]

def logsumexp_np(x):
    return np.log(np.sum(np.exp(x), axis=-1))

# derandomize=True: the same examples on every run, so the executed notebook is reproducible
# (the test suite's own hypothesis profile does the same).
@settings(max_examples=60, deadline=None, derandomize=True)
@given(testing.arrays(dtypes=st.just(np.dtype("float64")),
                      shape=testing.shapes(min_dims=1, max_dims=3, min_side=1), bound=50.0))
def test_logsumexp(x):
    testing.check_against(logsumexp, logsumexp_np, x, atol=1e-12 * (1 + np.abs(x).max()),
                          ulps=8)

test_logsumexp()
print("logsumexp agrees with NumPy (eager and traced) on 60 generated arrays")

# %% [markdown]
# ## Transformations agree: `jit` and `vmap` properties
#
# The compiled and batched versions must match the eager one. A property for any shape.
# `jit(f)(x)` would serve each new shape's first call from the interpreter while the kernel
# compiles (tiered jit); `jit(f).lower(x).compile()` compiles first, so the property checks
# the kernel. (A test suite can instead set `FUNCTRANS_JIT_TIERED=0`.)

# %%
def softmax_cross_entropy(logits, label):
    return -ft.nn.log_softmax(logits)[label]

@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(1, 6), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_jit_and_vmap_agree(batch, classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(batch, classes)) * 3
    labels = rng.integers(0, classes, size=batch)
    eager = np.stack([softmax_cross_entropy(l, y) for l, y in zip(logits, labels)])
    batched = ft.vmap(softmax_cross_entropy)(logits, labels)
    compiled = ft.jit(ft.vmap(softmax_cross_entropy)).lower(logits, labels).compile()(
        logits, labels)
    # -log_softmax(x)[y] = logsumexp(x) - x[y] subtracts numbers of size max|x|: its error is
    # a few ulps of max|x|, not of the (possibly tiny) result.
    atol = 8 * np.finfo(np.float64).eps * max(1.0, np.abs(logits).max())
    np.testing.assert_allclose(batched, eager, rtol=1e-13, atol=atol)
    np.testing.assert_allclose(compiled, eager, rtol=1e-13, atol=atol)

test_jit_and_vmap_agree()
print("vmap and jit(vmap) agree with the eager loop")

# %% [markdown]
# ## Gradients: `check_grads`
#
# `testing.check_grads(f, args, order)` compares forward-mode and reverse-mode derivatives with
# finite differences up to `order`. Combined with hypothesis it tests a derivative on random
# points, for example that `grad(logsumexp)` is the softmax and second derivatives are right:

# %%
@settings(max_examples=25, deadline=None, derandomize=True)
@given(testing.arrays(dtypes=st.just(np.dtype("float64")), shape=st.integers(1, 5),
                      bound=5.0))
def test_logsumexp_derivatives(x):
    testing.check_grads(logsumexp, (x,), order=2)
    np.testing.assert_allclose(ft.grad(logsumexp)(x), ft.nn.softmax(x), rtol=1e-12)

test_logsumexp_derivatives()
print("first and second derivatives agree with finite differences")

# %% [markdown]
# ## A failing property, shrunk
#
# A bug hypothesis finds: this "safe" normalization divides by zero for an all-zero vector.
# Hypothesis reports the smallest failing input it can find.

# %%
def normalize(x):
    return x / fnp.sqrt(fnp.sum(x * x))

@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(testing.arrays(dtypes=st.just(np.dtype("float64")), shape=st.integers(1, 4),
                      bound=10.0))
def test_normalize_has_unit_norm(x):
    assert np.isclose(np.linalg.norm(np.asarray(normalize(x))), 1.0)

try:
    test_normalize_has_unit_norm()
    found = None
except AssertionError as e:
    found = e
print("hypothesis found a counterexample:", found is not None)
assert found is not None

# %% [markdown]
# In a project, these functions live in `tests/` and pytest collects them; `tests/` of this
# repository checks every functrans primitive the same way (`testing.check_against` against
# NumPy and SciPy, `check_grads` for every derivative rule).
