# %% [markdown]
# # 4. `jit` under the hood
#
# `jit(f)` traces `f` once per argument signature (shapes, dtypes, static arguments) into a
# jaxpr, optimizes it, plans which operations fuse into one loop nest, emits Python source for
# one Numba kernel, compiles it, and caches it on disk. This notebook looks at each stage.

# %%
import time
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.passes import optimize

# %% [markdown]
# ## Stage 1: the traced jaxpr
#
# Python control flow on shapes runs at trace time; what is left is the list of primitives.
# Note the redundancy in this function: `x * 1.0`, a repeated `sin(x)`, and `y` which is never
# used.

# %%
def f(x):
    a = fnp.sin(x) * 1.0
    b = fnp.sin(x) * 2.0
    y = fnp.exp(x)                       # dead code
    return fnp.sum(a * b + x * x * 0.5)

x = np.linspace(0.0, 1.0, 1_000_000).astype("float32")
jaxpr = ft.make_jaxpr(f)(x)
print(jaxpr)

# %% [markdown]
# ## Stage 2: the optimized program
#
# `jit` runs exact simplification (`x * 1.0 -> x`, but not `x + 0.0`, which changes `-0.0`),
# constant folding, common-subexpression elimination and dead-code elimination:

# %%
print(optimize(jaxpr))

# %% [markdown]
# ## Stage 3: the generated kernel
#
# `jit(f).lower(args).as_text()` shows the module Numba compiles: one fused loop computes
# every element and the sum in registers, with no temporary arrays. SIMD versions of `sin`,
# `exp`, `tanh`... come from glibc's libmvec or portable polynomials.

# %%
print(ft.jit(f).lower(x).as_text())

# %% [markdown]
# ## Caching
#
# In one process, `jit` keeps one compiled entry per signature (new shapes or dtypes trace
# again). Across processes, kernels are cached on disk under a hash of their source
# (`FUNCTRANS_CACHE_DIR`), so a second run skips Numba's compile.
#
# The first call of a new signature does not wait for Numba: it returns after tracing,
# computed by the interpreter (each primitive's NumPy code), while the kernel compiles on a
# background thread (tiered jit); later calls run the kernel, waiting for it if needed. The
# first result agrees with the kernel's within its few-ulp bounds. `block_until_ready()` on such a result waits until calls run the kernel:
# call it before timing, as with JAX. `FUNCTRANS_JIT_TIERED=0` compiles before the first
# call returns.

# %%
jf = ft.jit(f)
for arg in (x, x[:1000], x[:1000], x.astype("float64")):
    t0 = time.perf_counter(); y = jf(arg); first = time.perf_counter() - t0
    y.block_until_ready(); ready = time.perf_counter() - t0
    print(f"{arg.dtype}[{arg.shape[0]}]: first result {first * 1e3:7.2f} ms, kernel ready "
          f"{ready * 1e3:7.2f} ms   cached signatures: {jf.cache_size()}")

# %% [markdown]
# ## Speed against NumPy
#
# NumPy evaluates `sin(x)*sin(x)*2 + x*x*0.5` one operation at a time, writing a full
# temporary array after each. The fused kernel reads `x` once. The gap grows with the
# number of operations and shrinks for tiny arrays, where call overhead dominates.

# %%
def f_np(x):
    return np.sum(np.sin(x) * 1.0 * np.sin(x) * 2.0 + x * x * 0.5)

def best(fn, arg, n=5):
    ft.block_until_ready(fn(arg))  # warm up: compiled (or loaded) before timing
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(arg); times.append(time.perf_counter() - t0)
    return min(times)

sizes = [10 ** k for k in range(2, 7)]
t_np = [best(f_np, x[:n]) for n in sizes]
t_ft = [best(jf, x[:n]) for n in sizes]
np.testing.assert_allclose(jf(x), f_np(x), rtol=1e-4)
for n, a, b in zip(sizes, t_np, t_ft):
    print(f"{n:>9,}: NumPy {a * 1e6:9.1f} us   jit {b * 1e6:9.1f} us   {a / b:5.1f}x")

plt.figure(figsize=(5, 3.5))
plt.loglog(sizes, np.array(t_np) * 1e6, "o-", label="NumPy")
plt.loglog(sizes, np.array(t_ft) * 1e6, "o-", label="functrans jit")
plt.xlabel("elements (float32)"); plt.ylabel("time (us)"); plt.legend(); plt.show()

# %% [markdown]
# ## When tracing meets Python
#
# Inside `jit`, values are abstract: Python `if` on an array value fails with a clear error.
# Use `lax.cond`/`fnp.where` (notebook 5), or mark the argument static.

# %%
def relu_branchy(x):
    return x if x > 0 else 0.0 * x

try:
    ft.jit(relu_branchy)(1.0)
except ft.ConcretizationTypeError as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])
print(ft.jit(relu_branchy, static_argnums=0)(-2.0))
