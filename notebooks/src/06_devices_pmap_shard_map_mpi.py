# %% [markdown]
# # 6. Devices, `pmap`, `shard_map` and MPI
#
# functrans runs SPMD programs (one program, many shards of data) on CPU devices. A CPU
# device is a logical slot with its own thread; their number is a run-time setting
# (`ft.config.update("num_cpu_devices", n)`, default one per core). `pmap` maps a function over
# the devices, `shard_map` runs a per-shard function over a mesh of devices, and collectives
# (`lax.psum`, `pmean`, `all_gather`, `ppermute`, ...) move values between shards. Under MPI
# the devices of several processes form one set, and the same code runs unchanged.

# %%
import os, pathlib, re, shutil, subprocess, sys, textwrap, time
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.sharding import Mesh, NamedSharding, P, make_mesh

ft.config.update("num_cpu_devices", 4)
print(ft.devices())

# %% [markdown]
# ## Placing arrays
#
# `device_put` with a `NamedSharding` splits an array over a mesh; each device holds one block
# (`addressable_shards`), and the array still reads as a whole.

# %%
mesh = make_mesh((4,), ("data",))
x = ft.device_put(np.arange(16.0).reshape(8, 2), NamedSharding(mesh, P("data")))
print(x.sharding)
for shard in x.addressable_shards:
    print(shard.device, np.asarray(shard.data).tolist())

# %% [markdown]
# ## Data-parallel training with `pmap`
#
# Each device gets a slice of the batch and a copy of the parameters, computes its gradient,
# and `lax.pmean` averages the gradients over the devices, so every copy applies the same
# update. The result equals one step on the whole batch on one device.

# %%
def loss(w, x, y):
    return fnp.mean((fnp.tanh(x @ w) - y) ** 2)

def parallel_step(w, x, y):
    g = lax.pmean(ft.grad(loss)(w, x, y), "devices")
    return w - 0.5 * g

rng = np.random.default_rng(0)
X = rng.standard_normal((256, 8)); true_w = rng.standard_normal(8)
Y = np.tanh(X @ true_w)
w = np.zeros(8)

pstep = ft.pmap(parallel_step, axis_name="devices", in_axes=(None, 0, 0))
Xs, Ys = X.reshape(4, 64, 8), Y.reshape(4, 64)
w_par = pstep(w, Xs, Ys)
w_one = w - 0.5 * ft.grad(loss)(w, X, Y)
print("shape:", w_par.shape, " max difference to one device:",
      float(np.abs(np.asarray(w_par) - np.asarray(w_one)).max()))
np.testing.assert_allclose(w_par[0], w_one, rtol=1e-12)

losses = []
w_rep = np.zeros((4, 8))                          # one replica per device
pstep_rep = ft.pmap(parallel_step, axis_name="devices")
for i in range(100):
    w_rep = pstep_rep(w_rep, Xs, Ys)
    losses.append(float(loss(w_rep[0], X, Y)))
print(f"loss {losses[0]:.4f} -> {losses[-1]:.5f}")
assert losses[-1] < 0.05 * losses[0]
plt.figure(figsize=(5, 3)); plt.semilogy(losses); plt.xlabel("step"); plt.ylabel("loss")
plt.title("data-parallel training on 4 CPU devices"); plt.show()

# %% [markdown]
# ## A tensor-parallel layer with `shard_map`
#
# A large layer `y = relu(x @ W1) @ W2` split Megatron-style over a `model` axis: `W1` by
# columns and `W2` by rows. Each device computes its slice of the hidden layer and a partial
# product; one `psum` adds the partials. No device ever holds the whole hidden layer.

# %%
tp_mesh = make_mesh((4,), ("model",))
W1 = rng.standard_normal((32, 256)) / 6; W2 = rng.standard_normal((256, 16)) / 16
xb = rng.standard_normal((8, 32))

def tp_layer(x, w1_block, w2_block):
    h = ft.nn.relu(x @ w1_block)              # (8, 64): this device's hidden units
    return lax.psum(h @ w2_block, "model")    # partial products summed over devices

sharded = ft.shard_map(tp_layer, mesh=tp_mesh,
                       in_specs=(P(), P(None, "model"), P("model", None)), out_specs=P())
y_tp = ft.jit(sharded)(xb, W1, W2)
y_ref = np.maximum(xb @ W1, 0) @ W2
print("max |difference| to the unsharded layer:", float(np.abs(np.asarray(y_tp) - y_ref).max()))
np.testing.assert_allclose(y_tp, y_ref, rtol=1e-10, atol=1e-12)
print("tensor-parallel output", y_tp.shape, "equals the unsharded layer (to rounding)")

# It differentiates like any function: gradients flow back through the psum.
g = ft.grad(lambda w1: fnp.sum(sharded(xb, w1, W2) ** 2))(W1)
g_ref = ft.grad(lambda w1: fnp.sum((ft.nn.relu(xb @ w1) @ W2) ** 2))(W1)
np.testing.assert_allclose(g, g_ref, rtol=1e-10)

# %% [markdown]
# `ft.debug.print` works inside shards (each prints its own line, in shard order):

# %%
ft.shard_map(lambda b: ft.debug.print("shard {i} holds {b}", i=lax.axis_index("x"), b=b),
             mesh=make_mesh((4,), ("x",)), in_specs=P("x"), out_specs=P())(fnp.arange(4.0))

# %% [markdown]
# ## Training in parallel: DP, FSDP, tensor, pipeline
#
# `functrans.demos.distributed` trains the demo's 64-128-10 digit classifier four ways, each
# a `pmap` over the devices, and checks every step (params, momentum, loss) against the
# single-device step:
#
# * **data parallel**: a copy of the parameters per device, the batch split, `pmean` of the
#   gradients;
# * **FSDP / ZeRO-3**: each device keeps 1/P of every layer (weights and momentum, as one
#   flat buffer per layer); a layer is `all_gather`-ed just before its use, and again in the
#   backward pass (the layer is rematerialized with `checkpoint`); `grad` turns the gather
#   into a `psum_scatter` of the gradient, so each device updates only its chunk;
# * **tensor parallel**: the first weight split by columns, the second by rows, one `psum`
#   of the partial logits;
# * **pipeline**: layer 1 on device 0, layer 2 on device 1, four microbatches passed along
#   with `ppermute` (GPipe's forward schedule; `grad` gives the backward one).
#
# The FSDP layer, whole:

# %%
import inspect
from functrans.demos import distributed as dd
print(inspect.getsource(dd._gathered_layer))

# %% [markdown]
# Three steps of each on the 4 CPU devices. `held/device` is what a device keeps between
# steps (params + momentum, float32), `+gathered` the weights FSDP gathers during a step.
# The model is tiny, so the parallel steps are slower than one device (synchronization
# dominates): what this shows is that the splits are exact and what each device holds.

# %%
rows = dd.run(4, steps=3)
print(dd.table(rows))
print({name: {c: k for c, k in counts.items() if k}
       for name, counts in dd.collectives(rows[1:]).items()})
assert all(r["dparams"] <= dd.TOLERANCE and r["dloss"] <= dd.TOLERANCE for r in rows)

# %% [markdown]
# The same variants run with one device per process under MPI (next section), each process
# holding only its own shards: `mpiexec -n 2 python -m mpi4py -m functrans.demo --distributed`.

# %% [markdown]
# ## The global view: `jit` partitions over a mesh
#
# Instead of writing the per-device program, place the arrays and let `jit` split the global
# program. Each primitive family says how shardings flow through it; where a layout has to
# change, the per-device program gets the collective. The same training step, three
# placements (a mesh of `Auto` axes: jit chooses and reshards):

# %%
from functrans.sharding import AxisType
from functrans.transforms.partition.partitioner import mesh_and_specs, partitioned

auto = make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
rng = np.random.default_rng(0)
w = [rng.normal(size=(16, 8)).astype(np.float32), rng.normal(size=(8, 4)).astype(np.float32)]
xb = rng.normal(size=(32, 16)).astype(np.float32)


@ft.jit
def sgd_step(params, x):
    loss = lambda p: fnp.mean((fnp.tanh(x @ p[0]) @ p[1]) ** 2)
    return [p - 0.1 * g for p, g in zip(params, ft.grad(loss)(params))]


want = sgd_step(w, xb)
place = lambda a, spec: ft.device_put(a, NamedSharding(auto, spec))
for name, specs, xspec in [("data parallel", (P(), P()), P("x")),
                           ("FSDP", (P("x"), P("x")), P("x")),
                           ("Megatron", (P(None, "x"), P("x")), P())]:
    args = ([place(a, s) for a, s in zip(w, specs)], place(xb, xspec))
    got = sgd_step(*args)
    jaxpr = sgd_step.trace(*args).jaxpr
    plan = partitioned(jaxpr, *mesh_and_specs(jaxpr, ft.tree_util.tree_leaves(args)), "step")
    moves = [e.prim.name for e in plan.per_shard.eqns
             if e.prim.name in ("psum", "all_gather", "psum_scatter")]
    err = max(float(np.abs(np.asarray(g) - np.asarray(v)).max()) for g, v in zip(got, want))
    print(f"{name:14} updated params {[g.sharding.spec for g in got]}, collectives {moves}, "
          f"max |difference| {err:.1e}")

# %% [markdown]
# Data parallelism all-reduces the gradients (one exchange for all of them); FSDP gathers each
# weight where it is used and reduce-scatters its gradient, so the updated shards stay split;
# Megatron's column layer needs no communication and its row layer all-reduces partial sums.
#
# On `Explicit` axes (`make_mesh`'s default, as in JAX) shardings are part of the types:
# `typeof` shows them, and an operation whose result sharding would be ambiguous is an error
# naming both operands (here: the same axis on two dimensions):

# %%
explicit = make_mesh((2,), ("x",))
rows_split = ft.device_put(np.ones((4, 4), np.float32), NamedSharding(explicit, P("x", None)))
cols_split = ft.device_put(np.ones((4, 4), np.float32), NamedSharding(explicit, P(None, "x")))
print(ft.typeof(rows_split), ft.typeof(cols_split))
try:
    ft.jit(lambda a, b: a + b)(rows_split, cols_split)
except Exception as e:
    print(type(e).__name__, str(e).split(" (at ")[0])

# %% [markdown]
# ## Many processes with MPI
#
# `ft.distributed.initialize()` connects the processes of an MPI job; `ft.devices()` then
# lists every process's devices, `pmap` over all local devices maps over the whole job, and
# collectives go through MPI. The `mpi` extra (`pip install -e ".[mpi]"`) installs mpi4py and
# MPICH, whose `mpiexec` sits next to the venv's `python`. Run a script with
#
# ```bash
# .venv/bin/mpiexec -n 2 .venv/bin/python -m mpi4py train.py
# ```
#
# (`-m mpi4py` makes an exception in one process abort the whole job instead of leaving the
# others waiting). Below, a small script written to a file and run that way, if `mpiexec` is
# installed; without it, the same script runs as one process.

# %%
script = textwrap.dedent('''
    import sys
    import numpy as np
    import functrans as ft
    from functrans import lax

    ft.config.update("num_cpu_devices", 2)
    ft.distributed.initialize()
    rank, n = ft.process_index(), ft.device_count()
    # Each process passes the rows of its own devices (2 per process).
    local = np.arange(n, dtype=float)[rank * 2:(rank + 1) * 2]
    total = ft.pmap(lambda v: lax.psum(v, "i"), "i")(local)
    # One write per line: the processes share mpiexec's output pipe.
    sys.stdout.write(f"process {rank} of {ft.process_count()}: {n} devices, "
                     f"psum = {np.asarray(total)}\\n")
''')
path = pathlib.Path("mpi_psum.py"); path.write_text(script)
mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
if mpiexec.exists():
    cmd = [str(mpiexec), "-n", "2", sys.executable, "-m", "mpi4py", str(path)]
else:
    cmd = [sys.executable, str(path)]
shown = ["mpiexec" if c == str(mpiexec) else "python" if c == sys.executable else c for c in cmd]
print("$", " ".join(shown))
out = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
print(out.stdout, out.stderr[-2000:] if out.returncode else "")
assert out.returncode == 0
n_proc = 2 if mpiexec.exists() else 1
assert sorted(re.findall(r"process \d of \d", out.stdout)) == \
    [f"process {r} of {n_proc}" for r in range(n_proc)]
path.unlink()
