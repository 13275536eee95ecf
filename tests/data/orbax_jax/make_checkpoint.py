"""Writes this directory's checkpoint with JAX 0.10.2 and orbax-checkpoint 0.12.8 (run it
with a Python that has them: ``python make_checkpoint.py``): a CheckpointManager's steps 1
and 2 of a training state (float32 parameters, an int32 table, optax adam's state), and the
same leaves in ``expected.npz`` (NumPy's format, keyed by step and key path) for the test
that restores the checkpoint on functrans (tests/test_ecosystem_orbax.py)."""
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

HERE = os.path.dirname(os.path.abspath(__file__))
params = {"dense": {"kernel": jnp.asarray(np.arange(12.0).reshape(4, 3) / 7 - 0.5, jnp.float32),
                    "bias": jnp.array([-1.5, 0.0, 2.25], jnp.float32)}}
table = jnp.asarray(np.arange(10).reshape(2, 5) * 3 - 7, jnp.int32)
x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32).reshape(2, 4)
opt = optax.adam(1e-2)
opt_state = opt.init(params)


def loss(p):
    return jnp.sum(jnp.tanh(x @ p["dense"]["kernel"] + p["dense"]["bias"]) ** 2)


ckpt_dir = os.path.join(HERE, "ckpts")
shutil.rmtree(ckpt_dir, ignore_errors=True)
expected = {}
with ocp.CheckpointManager(ckpt_dir) as mgr:
    for step in (1, 2):
        updates, opt_state = opt.update(jax.grad(loss)(params), opt_state, params)
        params = optax.apply_updates(params, updates)
        state = {"params": params, "opt_state": opt_state, "table": table,
                 "step": jnp.int32(step)}
        mgr.save(step, args=ocp.args.StandardSave(state))
        for path, leaf in jax.tree_util.tree_leaves_with_path(state):
            expected[f"{step}{jax.tree_util.keystr(path)}"] = np.asarray(leaf)
    mgr.wait_until_finished()
# orbax's commit markers name the absolute directory they were written in; only their
# presence matters, so they name the checkpoint relative to this directory.
for root, _, files in os.walk(ckpt_dir):
    if "commit_success.txt" in files:
        with open(os.path.join(root, "commit_success.txt"), "w") as f:
            f.write("Checkpoint commit was successful to "
                    + os.path.relpath(root, HERE).replace(".orbax-checkpoint-tmp", ""))
np.savez(os.path.join(HERE, "expected.npz"), **expected)
print(jax.__version__, ocp.__version__, sorted(expected)[:3], len(expected))
