# %% [markdown]
# # 8. Your own kernels with Numba
#
# Some computations are loops that array code expresses badly. A pair count over `N` points is
# `N²/2` distances, each falling into one histogram bin: as array code it materializes an
# `N × N` distance matrix (or a Python loop over blocks of it) and then a histogram; as a loop
# it is three nested `for`s and one addition, in constant memory. This is
# [JAX issue #3002](https://github.com/google/jax/issues/3002)'s problem.
#
# `ft.numba_call` takes such a loop written in plain Python, compiles it with Numba, and makes
# it one step of a functrans program: eagerly, under `jit` (the compiled program calls the
# kernel directly, with no Python in between), under `vmap`, and under `grad` once you give it
# a derivative rule. `ft.numba_vectorize` does the same for a scalar function applied
# elementwise, and fuses it into `jit`'s loops.

# %%
import math
import re
import time

import numba
import numpy as np

import functrans as ft
import functrans.numpy as fnp

# %% [markdown]
# ## A weighted pair count
#
# A kernel is called as `kernel(*operands, *results, **params)`: it reads its operands and
# writes its results in place. The results start filled with zeros, so a histogram can simply
# accumulate. Here: for every pair `i < j` of points whose distance falls in bin `b`
# (`edges[b] <= d < edges[b + 1]`), add `w[i] * w[j]` to `hist[b]`.

# %%
def pair_counts(pos, w, edges, hist):
    n, dim = pos.shape
    nbins = edges.shape[0] - 1
    for i in range(n):
        for j in range(i + 1, n):
            d2 = 0.0
            for k in range(dim):
                t = pos[i, k] - pos[j, k]
                d2 += t * t
            d = np.sqrt(d2)
            if d < edges[0] or d >= edges[nbins]:
                continue
            b = np.searchsorted(edges, d, side="right") - 1
            hist[b] += w[i] * w[j]

# %% [markdown]
# A clustered data set (points scattered around 20 centres, wrapped into the unit box) with
# weights, and a uniform random catalogue of the same size for comparison. `N = 2,000` points
# make 2 million pairs per count.

# %%
rng = np.random.default_rng(0)
N = 2_000
centres = rng.uniform(size=(20, 3))
pos = (centres[rng.integers(0, 20, N)] + 0.05 * rng.normal(size=(N, 3))) % 1.0
w = rng.uniform(0.5, 1.5, N)
rand = rng.uniform(size=(N, 3))
rand_w = np.ones(N)
edges = np.geomspace(0.01, 0.3, 9)

counts_spec = ft.ShapeDtypeStruct((len(edges) - 1,), np.float64)
dd = ft.numba_call(pair_counts, counts_spec, pos, w, edges)
dd

# %% [markdown]
# Check it against NumPy. The oracle computes the distances a block of rows at a time (the
# full `N × N` matrix would be 32 MB at this size, 8 GB at `N = 32,000`) and histograms the
# pairs `j > i` of each block:

# %%
def pair_counts_numpy(pos, w, edges, block=250):
    hist = np.zeros(len(edges) - 1)
    for s in range(0, len(pos), block):
        d = np.sqrt(((pos[s:s + block, None, :] - pos[None, :, :]) ** 2).sum(-1))
        later = np.arange(len(pos))[None, :] > np.arange(s, s + len(d))[:, None]
        pair_w = w[s:s + block, None] * w[None, :]
        hist += np.histogram(d[later], bins=edges, weights=pair_w[later])[0]
    return hist

oracle = pair_counts_numpy(pos, w, edges)
np.testing.assert_allclose(dd, oracle, rtol=1e-12)
print("kernel == NumPy oracle; relative difference",
      np.max(np.abs(np.asarray(dd) - oracle) / oracle))

# %% [markdown]
# ## The kernel inside a jitted analysis
#
# The kernel is a step like any other: one `ft.jit` counts data pairs and random pairs,
# normalizes each count by its catalogue's total pair weight `((Σw)² - Σw²) / 2`, and forms the
# correlation function estimate `ξ = DD / RR - 1` (positive where the data are clustered).

# %%
def total_pair_weight(w):
    return (fnp.sum(w) ** 2 - fnp.sum(w * w)) / 2

def correlation(pos, w, rand, rand_w, edges):
    spec = ft.ShapeDtypeStruct((edges.shape[0] - 1,), pos.dtype)
    dd = ft.numba_call(pair_counts, spec, pos, w, edges)
    rr = ft.numba_call(pair_counts, spec, rand, rand_w, edges)
    return (dd / total_pair_weight(w)) / (rr / total_pair_weight(rand_w)) - 1.0

print(ft.make_jaxpr(correlation)(pos, w, rand, rand_w, edges))

# %%
xi = ft.jit(correlation)(pos, w, rand, rand_w, edges)
xi_numpy = (oracle / ((w.sum() ** 2 - (w * w).sum()) / 2)) / (
    pair_counts_numpy(rand, rand_w, edges) / ((N * N - N) / 2)) - 1
np.testing.assert_allclose(xi, xi_numpy, rtol=1e-10)
for lo, hi, x in zip(edges[:-1], edges[1:], np.asarray(xi)):
    print(f"  {lo:.3f} <= r < {hi:.3f}   xi = {x:7.3f}")

# %% [markdown]
# How much does going through `jit` cost? Compare the compiled analysis with the same thing
# done by hand: the kernel compiled by `numba.njit`, called twice on zeroed arrays, and the
# normalization in NumPy. (`lower(...).compile()` compiles first, so the first call is
# the native program and not tiered jit's interpreter.)

# %%
def median_time(f, repeat=7):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return np.median(times)

compiled = ft.jit(correlation).lower(pos, w, rand, rand_w, edges).compile()
pair_counts_njit = numba.njit(pair_counts)

def by_hand():
    dd, rr = np.zeros(len(edges) - 1), np.zeros(len(edges) - 1)
    pair_counts_njit(pos, w, edges, dd)
    pair_counts_njit(rand, rand_w, edges, rr)
    return (dd / ((w.sum() ** 2 - (w * w).sum()) / 2)) / (rr / ((N * N - N) / 2)) - 1

np.testing.assert_allclose(compiled(pos, w, rand, rand_w, edges), by_hand(), rtol=1e-12)
t_jit = median_time(lambda: compiled(pos, w, rand, rand_w, edges))
t_hand = median_time(by_hand)
print(f"jit(correlation): {t_jit * 1e3:.1f} ms   njit kernel + NumPy: {t_hand * 1e3:.1f} ms   "
      f"ratio {t_jit / t_hand:.2f}")

# %% [markdown]
# Both spend their time in the same compiled loop over pairs, so the times are close (they
# vary from run to run and machine to machine): being a step of a functrans program adds no
# measurable cost to the kernel here.
#
# ## A scalar special function: `numba_vectorize`
#
# Elementwise functions with a loop or a branch inside (a series summed until it converges, an
# asymptotic expansion for large arguments) are awkward as array code: every element takes a
# different number of terms. Written for one scalar, they are ordinary code. Here is the
# modified Bessel function `I_ν(x)` for integer `ν`: its power series below `|x| = 25`, and
# above it the asymptotic expansion (the series would need about `|x|` terms there). It is a
# `numba.njit` helper, which the kernels below call.

# %%
@numba.njit
def bessel_i(nu, x):
    ax = abs(x)
    if ax < 25.0:   # sum_k (x/2)^(2k+nu) / (k! (k+nu)!)
        half = 0.5 * ax
        term = 1.0
        for k in range(1, nu + 1):
            term *= half / k
        total, k = term, 1
        while term > 1e-17 * total:
            term *= half * half / (k * (k + nu))
            total += term
            k += 1
    else:           # e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(nu) / x^k
        mu = 4.0 * nu * nu
        term, total, k = 1.0, 1.0, 1
        while abs(term) > 1e-17:
            term *= -(mu - (2 * k - 1) ** 2) / (k * 8.0 * ax)
            total += term
            k += 1
        total *= math.exp(ax) / math.sqrt(2.0 * math.pi * ax)
    return -total if x < 0 and nu % 2 == 1 else total

# %% [markdown]
# `ft.numba_vectorize` makes a scalar function an elementwise operation that broadcasts like a
# ufunc. `derivatives=` gives its partial derivative for each operand, here
# `I₀' = I₁`; NumPy's `np.i0` checks the values.

# %%
i1 = ft.numba_vectorize(lambda x: bessel_i(1, x))
i0 = ft.numba_vectorize(lambda x: bessel_i(0, x), derivatives=(i1,))

xs = np.linspace(-40.0, 40.0, 2001)
err = np.max(np.abs(np.asarray(i0(xs)) / np.i0(xs) - 1))
print(f"max relative difference from np.i0 on [-40, 40]: {err:.1e}")
assert err < 1e-13

# %% [markdown]
# A use: the von Mises distribution on the circle has log-density
# `κ cos(θ - μ) - log(2π I₀(κ))` (here `μ = 0`). Under `jit`, `i0` is one more operation in the elementwise
# chain: the generated code has a single loop kernel (its `define void @ftk_...`), and Numba's
# compiled `bessel_i` is called from its body and inlined there, with no array in between.

# %%
def log_density(theta, kappa):
    return kappa * fnp.cos(theta) - fnp.log(2 * np.pi * i0(kappa))

theta = np.linspace(-np.pi, np.pi, 1000)
kappa = np.linspace(0.1, 40.0, 1000)
np.testing.assert_allclose(ft.jit(log_density)(theta, kappa),
                           kappa * np.cos(theta) - np.log(2 * np.pi * np.i0(kappa)), rtol=1e-12)
source = ft.jit(log_density).lower(theta, kappa).as_text("source")
lines = source.splitlines()
kernels = [i for i, line in enumerate(lines) if line.startswith("define void @ftk_")]
print(len(kernels), "loop kernel; the calls in its body:")
body = lines[kernels[0]:lines.index("}", kernels[0])]
print("\n".join(line for line in body if " call " in line))
assert len(kernels) == 1

# %% [markdown]
# The derivative of the mean negative log-likelihood with respect to `κ` is
# `I₁(κ)/I₀(κ) - mean(cos θ)`: `ft.grad` builds it from the rule, and central finite
# differences agree. It is zero at the maximum-likelihood `κ` (the samples below were drawn
# with `κ = 4`).

# %%
samples = np.random.default_rng(1).vonmises(0.0, 4.0, size=500)

def nll(kappa, theta):
    return -fnp.mean(log_density(theta, kappa))

dnll = ft.jit(ft.grad(nll))
for k in [0.5, 4.0, 30.0]:
    h = 1e-6
    fd = (nll(k + h, samples) - nll(k - h, samples)) / (2 * h)
    g = dnll(k, samples)
    print(f"kappa = {k:4}: grad {float(g): .10f}   finite difference {float(fd): .10f}")
    assert abs(g - fd) < 1e-8

# %% [markdown]
# ## Kernels under `vmap`
#
# A kernel is written for one example; `vmap` needs to know how to run it on a batch.
# `vmap_method="sequential"` loops over the batch, and under `jit` that loop is compiled
# (the equation's `loops=(4,)`). Here: the pair counts of four random catalogues, against a
# Python loop.

# %%
randoms = np.random.default_rng(2).uniform(size=(4, N, 3))

def random_counts(rand):
    return ft.numba_call(pair_counts, counts_spec, rand, rand_w, edges,
                         vmap_method="sequential")

batched = ft.jit(ft.vmap(random_counts))
print(ft.make_jaxpr(ft.vmap(random_counts))(randoms))
loop = np.stack([pair_counts_numpy(r, rand_w, edges) for r in randoms])
np.testing.assert_allclose(batched(randoms), loop, rtol=1e-12)
print("vmap(sequential) == Python loop; counts in the first bin:", np.asarray(batched(randoms))[:, 0])

# %% [markdown]
# A kernel that can take the batch itself is called once instead:
# `vmap_method="expand_dims"` passes batched operands with the batch axis in front (and
# unbatched ones with a new axis of size 1), and expects the results batched in front. This
# exponential moving average, a recurrence along the last axis, treats every leading axis as a
# row, so it takes a batch as it is. `alpha` is a static parameter: a compile-time constant to
# Numba, declared after the results.

# %%
def ema(x, out, alpha):
    T = x.shape[-1]
    rows, res = x.reshape(-1, T), out.reshape(-1, T)
    for r in range(rows.shape[0]):
        acc = rows[r, 0]
        res[r, 0] = acc
        for t in range(1, T):
            acc = alpha * rows[r, t] + (1.0 - alpha) * acc
            res[r, t] = acc

def smooth(x):
    return ft.numba_call(ema, ft.ShapeDtypeStruct(x.shape, x.dtype), x,
                         vmap_method="expand_dims", alpha=0.1)

series = np.random.default_rng(3).normal(size=(8, 3, 200))
loop = np.stack([np.asarray(smooth(s)) for s in series])
print(ft.make_jaxpr(ft.vmap(smooth))(series))
assert np.array_equal(ft.vmap(smooth)(series), loop)
assert np.array_equal(ft.jit(ft.vmap(smooth))(series), loop)
print("vmap(expand_dims) == Python loop")

# %% [markdown]
# Without a `vmap_method` (or a `batched_kernel=`), `vmap` cannot know whether the kernel
# takes a batch, and says so:

# %%
try:
    ft.vmap(lambda x: ft.numba_call(ema, ft.ShapeDtypeStruct(x.shape, x.dtype), x,
                                    alpha=0.1))(series)
except NotImplementedError as e:
    print("NotImplementedError:", e)

# %% [markdown]
# ## Derivative rules: `numba_kernel(vjp=(fwd, bwd))`
#
# Functrans cannot differentiate through compiled code it did not generate. Asking for the
# gradient of the correlation with respect to the weights fails, naming the kernel:

# %%
try:
    ft.grad(lambda w: correlation(pos, w, rand, rand_w, edges)[0])(w)
except TypeError as e:
    print("TypeError:", e)

# %% [markdown]
# The count is quadratic in the weights: `∂hist[b]/∂w[i]` is the sum of `w[j]` over `i`'s
# partners in bin `b`. So the backward pass is another pair loop, a second kernel taking the
# cotangent `ct` of the histogram:

# %%
def pair_counts_bwd(pos, w, edges, ct, w_bar):
    n, dim = pos.shape
    nbins = edges.shape[0] - 1
    for i in range(n):
        for j in range(i + 1, n):
            d2 = 0.0
            for k in range(dim):
                t = pos[i, k] - pos[j, k]
                d2 += t * t
            d = np.sqrt(d2)
            if d < edges[0] or d >= edges[nbins]:
                continue
            c = ct[np.searchsorted(edges, d, side="right") - 1]
            w_bar[i] += c * w[j]
            w_bar[j] += c * w[i]

# %% [markdown]
# `ft.numba_kernel` declares the kernel once, with its result (here a function of the
# operands), its batching and its rules: `fwd(*operands)` returns the result and residuals,
# `bwd(residuals, ct)` one cotangent per operand. The count is piecewise constant in the
# positions and the bin edges, so their cotangents are zero (`None`). The rules' own
# `numba_call`s get a `vmap_method` too, for `vmap` of `grad`.

# %%
def counts_result(pos, w, edges):
    return ft.ShapeDtypeStruct((edges.shape[0] - 1,), w.dtype)

def counts_fwd(pos, w, edges):
    hist = ft.numba_call(pair_counts, counts_result(pos, w, edges), pos, w, edges,
                         vmap_method="sequential")
    return hist, (pos, w, edges)

def counts_bwd(residuals, ct):
    pos, w, edges = residuals
    w_bar = ft.numba_call(pair_counts_bwd, ft.ShapeDtypeStruct(w.shape, w.dtype),
                          pos, w, edges, ct, vmap_method="sequential")
    return None, w_bar, None

weighted_pair_counts = ft.numba_kernel(pair_counts, result=counts_result,
                                       vjp=(counts_fwd, counts_bwd),
                                       vmap_method="sequential")

def correlation_r(pos, w, rand, rand_w, edges):
    dd = weighted_pair_counts(pos, w, edges)
    rr = weighted_pair_counts(rand, rand_w, edges)
    return (dd / total_pair_weight(w)) / (rr / total_pair_weight(rand_w)) - 1.0

# %% [markdown]
# The gradient of `ξ` in the first bin with respect to the 2,000 weights says which points
# drive the small-scale clustering: raising the weight of a point inside a cluster raises `ξ`,
# of an isolated point lowers it. It runs in one `jit`; central finite differences check it
# along a random direction and for the weights with the smallest and largest gradients:

# %%
def xi_small(w):
    return correlation_r(pos, w, rand, rand_w, edges)[0]

grad_w = ft.jit(ft.grad(xi_small))(w)
v = np.random.default_rng(4).normal(size=N)
h = 1e-5
fd = (xi_small(w + h * v) - xi_small(w - h * v)) / (2 * h)
print(f"<grad, v> = {float(grad_w @ v):.10f}   finite difference {float(fd):.10f}")
np.testing.assert_allclose(grad_w @ v, fd, rtol=1e-7)
order = np.argsort(np.asarray(grad_w))
for i in [order[0], order[-1]]:
    e = np.zeros(N)
    e[i] = h
    fd_i = (xi_small(w + e) - xi_small(w - e)) / (2 * h)
    print(f"  d xi / d w[{i:4}] = {float(grad_w[i]): .6e}   finite difference {float(fd_i): .6e}")
    np.testing.assert_allclose(grad_w[i], fd_i, rtol=1e-5, atol=1e-12)

# %% [markdown]
# ## When Numba cannot compile the kernel
#
# Kernels are compiled when they are called (eagerly) or traced (under `jit`), for the
# operands' dtypes and ranks, so mistakes surface at the call. A common one: calling a plain
# Python helper from the kernel. The error names the kernel, the types it was compiled for, the
# line of your code that called it, and Numba's own explanation, which points at the kernel's
# line (in a notebook, "line 6" of the cell; in a module, the file and line, with the source
# shown). The directory of the notebook's temporary cell files is trimmed from the message:

# %%
def clip_square(v):          # a plain Python function: Numba cannot call it
    return min(v * v, 1.0)

def clipped_squares(x, out):
    for i in range(x.shape[0]):
        out[i] = clip_square(x[i])

try:
    ft.jit(lambda x: ft.numba_call(clipped_squares, ft.ShapeDtypeStruct(x.shape, x.dtype),
                                   x))(np.ones(3))
except Exception as e:
    print(f"{type(e).__name__}: " + re.sub(r'File "[^"]*/', 'File "', str(e)))

# %% [markdown]
# The fix: decorate `clip_square` with `@numba.njit` (as `bessel_i` above), so the kernel can
# call it.

# %% [markdown]
# ## Checking the rules: `check_transforms`
#
# A derivative or batching rule is a second implementation of the function, and can disagree
# with it. `ft.testing.check_transforms(f, *args)` checks the laws that tie the transformations
# together (`jit` and `vmap` against `f`, `vjp` against finite differences through the
# transpose law, `jit(grad)` and `vmap(grad)` against `grad`) and names the first that fails.
# On 300 points (a quick check) the kernel with its rules passes; forward mode is skipped, as
# a `vjp` rule defines reverse mode only:

# %%
def counts_of_weights(pos, w):
    return weighted_pair_counts(pos, w, edges)

print(ft.testing.check_transforms(counts_of_weights, pos[:300], w[:300]))

# %% [markdown]
# A typical slip in a backward kernel: each pair `(i, j)` contributes to both `w_bar[i]` and
# `w_bar[j]`, and this one forgets the second. The check fails at the `vjp` law and shows
# where:

# %%
def pair_counts_bwd_wrong(pos, w, edges, ct, w_bar):
    n, dim = pos.shape
    nbins = edges.shape[0] - 1
    for i in range(n):
        for j in range(i + 1, n):
            d2 = 0.0
            for k in range(dim):
                t = pos[i, k] - pos[j, k]
                d2 += t * t
            d = np.sqrt(d2)
            if d < edges[0] or d >= edges[nbins]:
                continue
            w_bar[i] += ct[np.searchsorted(edges, d, side="right") - 1] * w[j]

def counts_bwd_wrong(residuals, ct):
    pos, w, edges = residuals
    return None, ft.numba_call(pair_counts_bwd_wrong, ft.ShapeDtypeStruct(w.shape, w.dtype),
                               pos, w, edges, ct, vmap_method="sequential"), None

wrong_counts = ft.numba_kernel(pair_counts, result=counts_result,
                               vjp=(counts_fwd, counts_bwd_wrong), vmap_method="sequential")
try:
    ft.testing.check_transforms(lambda pos, w: wrong_counts(pos, w, edges), pos[:300], w[:300])
except AssertionError as e:
    print(f"{type(e).__name__}: {e}")
