# %% [markdown]
# # 5. Control flow and randomness
#
# Python loops and `if`s run at trace time, so under `jit` they unroll (or fail on traced
# values). `lax.fori_loop`, `lax.scan`, `lax.while_loop` and `lax.cond` stage loops and
# branches into the program instead: they compile to real loops and differentiate, batch and
# run on devices like everything else. Randomness is explicit: `ft.random` functions take a
# key, and the same key gives the same numbers (bit for bit JAX's threefry).

# %%
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, random

# %% [markdown]
# ## An ODE integrator with `fori_loop` and `scan`
#
# The Lorenz system with fourth-order Runge-Kutta. `fori_loop` keeps only the final state;
# `scan` also stacks a per-step output (the trajectory). Both compile to one loop.

# %%
def lorenz(u, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    x, y, z = u[0], u[1], u[2]
    return fnp.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

def rk4(u, dt):
    k1 = lorenz(u); k2 = lorenz(u + dt / 2 * k1)
    k3 = lorenz(u + dt / 2 * k2); k4 = lorenz(u + dt * k3)
    return u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

@ft.jit
def final_state(u0, dt=0.01):
    return lax.fori_loop(0, 2000, lambda i, u: rk4(u, dt), u0)

@ft.jit
def trajectory(u0, dt=0.01):
    def step(u, _):
        u = rk4(u, dt)
        return u, u
    return lax.scan(step, u0, None, length=2000)[1]

u0 = fnp.array([1.0, 1.0, 1.0])
path = np.asarray(trajectory(u0))
np.testing.assert_allclose(final_state(u0), path[-1], rtol=1e-12)
fig = plt.figure(figsize=(5, 4)); ax = fig.add_subplot(projection="3d")
ax.plot(*path.T, lw=0.5); ax.set_title("Lorenz attractor, RK4 in lax.scan"); plt.show()

# %% [markdown]
# The loop differentiates too: the sensitivity of the state after 1 time unit to the
# initial condition (a 3x3 Jacobian through 100 RK4 steps), checked against finite
# differences.

# %%
flow = lambda u: lax.fori_loop(0, 100, lambda i, v: rk4(v, 0.01), u)
J = ft.jit(ft.jacfwd(flow))(u0)
print(np.round(np.asarray(J), 2))
ft.testing.check_grads(flow, (u0,), order=1, modes=("fwd", "rev"))

# %% [markdown]
# ## Keys, not global state
#
# `random.key(seed)` makes a key; `split` derives independent keys. A function that draws
# numbers takes a key argument, so it stays pure and works under `jit` and `vmap`.

# %%
key = random.key(0)
k1, k2 = random.split(key)
print(random.normal(k1, (3,)), random.normal(k1, (3,)))   # same key, same numbers
print(random.uniform(k2, (3,)))
per_row = ft.vmap(lambda k: random.normal(k, (2,)))(random.split(key, 4))
print(per_row.shape)

# %% [markdown]
# ## A sampler: random-walk Metropolis in `scan`
#
# Sampling a two-component Gaussian mixture. The random numbers are drawn up front, one key
# per use (proposal steps and acceptance thresholds for 8 chains x 3,000 steps); `scan`
# consumes them step by step and accepts moves with `fnp.where`, and `vmap` runs the 8 chains
# at once. (Drawing inside a compiled loop is the JAX idiom, but today the threefry kernel it
# generates is too large for Numba to compile quickly, so functrans programs draw outside
# `jit`.)

# %%
def log_density(x):
    return fnp.logaddexp(-0.5 * ((x - 2.0) / 0.6) ** 2, -0.5 * ((x + 2.0) / 0.6) ** 2)

def chain(x0, steps, log_u, scale=1.5):
    def step(x, inputs):
        z, lu = inputs
        proposal = x + scale * z
        accept = lu < log_density(proposal) - log_density(x)
        x = fnp.where(accept, proposal, x)
        return x, x
    return lax.scan(step, x0, (steps, log_u))[1]

k_steps, k_accept = random.split(random.key(1))
steps = random.normal(k_steps, (8, 3000))
log_u = fnp.log(random.uniform(k_accept, (8, 3000)))
samples = ft.jit(ft.vmap(chain))(fnp.zeros(8), steps, log_u)
s = np.asarray(samples)[:, 500:].ravel()
print(f"{s.size} samples, mean {s.mean():+.3f} (exact 0), E|x| {np.abs(s).mean():.2f} (exact ~2.0)")
assert abs(s.mean()) < 0.3 and abs(np.abs(s).mean() - 2.0) < 0.2
grid = np.linspace(-4.5, 4.5, 300)
dens = np.exp(np.asarray(log_density(grid))); dens /= dens.sum() * (grid[1] - grid[0])
plt.figure(figsize=(5, 3)); plt.hist(s, bins=80, density=True, alpha=0.6, label="samples")
plt.plot(grid, dens, label="target"); plt.legend(); plt.show()

# %% [markdown]
# ## A recurrent network with `scan`
#
# An Elman RNN reads a sequence with `scan`; `grad` differentiates through all steps
# (backpropagation through time), and `jit` compiles forward and backward loops. Trained here
# to output the running mean of a noisy signal.

# %%
H = 16
k = random.split(random.key(2), 3)
params = {"wx": random.normal(k[0], (1, H)) * 0.5, "wh": random.normal(k[1], (H, H)) * 0.1,
          "wo": random.normal(k[2], (H, 1)) * 0.1, "b": fnp.zeros(H)}

def rnn(params, xs):
    def step(h, x):
        h = fnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h @ params["wo"]
    return lax.scan(step, fnp.zeros(H), xs)[1]

xs = np.asarray(random.normal(random.key(3), (60, 1)))
target = np.cumsum(xs, axis=0) / np.arange(1, 61)[:, None]
loss = lambda p: fnp.mean((rnn(p, xs) - target) ** 2)

@ft.jit
def train_step(p):
    value, g = ft.value_and_grad(loss)(p)
    return ft.tree_util.tree_map(lambda a, d: a - 0.3 * d, p, g), value

history = []
for i in range(300):
    params, value = train_step(params)
    history.append(float(value))
print(f"loss {history[0]:.4f} -> {history[-1]:.4f}")
assert history[-1] < 0.75 * history[0]
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3))
a1.semilogy(history); a1.set_xlabel("step"); a1.set_ylabel("loss")
a2.plot(target, label="running mean"); a2.plot(np.asarray(rnn(params, xs)), label="RNN")
a2.legend(); plt.show()
