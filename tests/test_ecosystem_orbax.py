"""orbax-checkpoint (the pinned release of tests/ecosystem.py) runs unchanged on functrans: a
training state (float32/int32 arrays, optax adam's state) saved over several steps by
``CheckpointManager``, ``StandardCheckpointer`` and ``PyTreeCheckpointer`` restores bit-equal;
a checkpoint JAX 0.10.2 wrote (tests/data/orbax_jax) restores bit-equal, and one functrans
writes restores on JAX (the same on-disk format); and under MPI two processes each write the
shards of an array split over them and restore them. Expected values come from the same
programs on JAX 0.10.2 (CPU, float32); every program runs in a child process under
``python -m functrans.as_jax``."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from ecosystem import library_dir, run_as_jax

pytestmark = pytest.mark.timeout(900)
GOLDEN = pathlib.Path(__file__).parent / "data" / "orbax_jax"
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"

# A training loop that checkpoints every step; the leaves of the restored state are compared
# with the saved ones bit for bit, inside the program (NumPy's array_equal and dtypes).
TRAINING = """
    import json, os, sys, tempfile
    import numpy as np
    import jax, jax.numpy as jnp
    import optax
    import orbax.checkpoint as ocp

    events, durations, scalars = set(), set(), set()
    jax.monitoring.register_event_listener(lambda e, **kw: events.add(e))
    jax.monitoring.register_event_duration_secs_listener(lambda e, d, **kw: durations.add(e))
    jax.monitoring.register_scalar_listener(lambda e, v, **kw: scalars.add(e))

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    trainable = {"w": jax.random.normal(k1, (4, 3), jnp.float32),
                 "b": jnp.zeros((3,), jnp.float32)}
    emb = jax.random.randint(k2, (5,), 0, 100, jnp.int32)
    x = jnp.linspace(-1.0, 1.0, 16, dtype=jnp.float32).reshape(4, 4)
    y = jnp.sin(x[:, :3])
    opt = optax.adam(1e-2)
    opt_state = opt.init(trainable)

    @jax.jit
    def step(p, s):
        l, g = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))(p)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, l

    def bit_equal(a, b):
        return all(np.array_equal(np.asarray(u), np.asarray(v)) and u.dtype == v.dtype
                   for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)))

    root = tempfile.mkdtemp()
    mgr = ocp.CheckpointManager(os.path.join(root, "ckpts"),
                                options=ocp.CheckpointManagerOptions(max_to_keep=2))
    saved = {}
    for s in range(5):
        trainable, opt_state, _ = step(trainable, opt_state)
        saved[s] = {"params": trainable, "opt_state": opt_state, "emb": emb,
                    "step": jnp.int32(s)}
        mgr.save(s, args=ocp.args.StandardSave(saved[s]))
    mgr.wait_until_finished()
    latest = mgr.latest_step()
    abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), saved[latest])
    restored = mgr.restore(latest, args=ocp.args.StandardRestore(abstract))
    earlier = mgr.restore(3, args=ocp.args.StandardRestore(abstract))
    steps = list(mgr.all_steps())
    mgr.close()
    std = ocp.StandardCheckpointer()
    std.save(os.path.join(root, "std"), saved[2])
    std.wait_until_finished()
    by_std = std.restore(os.path.join(root, "std"), abstract)
    pyt = ocp.PyTreeCheckpointer()
    pyt.save(os.path.join(root, "pytree"), saved[1])
    by_pytree = pyt.restore(os.path.join(root, "pytree"))
    ours = lambda names: sorted(n for n in names if n.startswith(("/jax/orbax", "/jax/checkpoint")))
    print(json.dumps({
        "steps": steps, "latest": latest,
        "manager": bit_equal(restored, saved[latest]) and bit_equal(earlier, saved[3]),
        "tree": jax.tree.structure(restored) == jax.tree.structure(saved[latest]),
        "standard": bit_equal(by_std, saved[2]), "pytree": bit_equal(by_pytree, saved[1]),
        "w00": float(restored["params"]["w"][0, 0]),
        "mu_b": np.asarray(restored["opt_state"][0].mu["b"]).tolist(),
        "count": int(restored["opt_state"][0].count),
        "dtypes": sorted({str(l.dtype) for l in jax.tree.leaves(restored)}),
        "events": ours(events), "durations": ours(durations), "scalars": ours(scalars)}))
"""


def test_training_state_checkpoints_every_step_and_restores_bit_equal():
    # On JAX 0.10.2 the program prints steps [3, 4] (max_to_keep=2), latest 4, every restore
    # bit-equal to what was saved, w[0, 0] = 1.0539335 and adam's mu of b after 5 steps
    # [-0.07250021, -0.00287301, 0.04654673], count 5. The bit-equality is checked inside
    # the program (each run against its own saved values); w and mu are compared with JAX's
    # to float32 rounding (functrans: mu_b [-0.07250020, -0.00287301, 0.04654672]: the mean's
    # gradient sums in another order), 1e-5 relative. JAX's orbax records 12 events, 38
    # durations and 23 scalars under /jax/orbax and /jax/checkpoint through jax.monitoring:
    # functrans's listeners receive the same ones (their names are compared exactly).
    res = json.loads(run_as_jax(TRAINING).strip().splitlines()[-1])
    assert res["steps"] == [3, 4] and res["latest"] == 4 and res["count"] == 5
    assert res["manager"] and res["tree"] and res["standard"] and res["pytree"]
    assert res["dtypes"] == ["float32", "int32"]
    assert res["w00"] == pytest.approx(1.0539335012435913, rel=1e-5)
    assert res["mu_b"] == pytest.approx([-0.07250020653009415, -0.0028730116318911314,
                                         0.046546731144189835], rel=1e-5)
    assert res["events"] == [
        "/jax/orbax/async_checkpointer/init", "/jax/orbax/checkpoint_manager/init",
        "/jax/orbax/checkpointer/init", "/jax/orbax/deprecation/checkpointer_legacy_args",
        "/jax/orbax/pytree_checkpoint_handler/init/ocdbt", "/jax/orbax/read/start",
        "/jax/orbax/read/storage_type", "/jax/orbax/read/success",
        "/jax/orbax/write/async/start", "/jax/orbax/write/start",
        "/jax/orbax/write/storage_type", "/jax/orbax/write/success"]  # JAX's, in order
    assert len(res["durations"]) == 38 and len(res["scalars"]) == 23
    assert "/jax/checkpoint/write/async/thread_duration_sec" in res["durations"]
    assert "/jax/orbax/write/gbytes" in res["scalars"]


RESTORE_JAX_CHECKPOINT = """
    import json, os, shutil, sys, tempfile
    import numpy as np
    import jax, jax.numpy as jnp
    import optax
    import orbax.checkpoint as ocp

    golden = sys.argv[1]
    expected = np.load(os.path.join(golden, "expected.npz"))
    work = os.path.join(tempfile.mkdtemp(), "ckpts")
    shutil.copytree(os.path.join(golden, "ckpts"), work)
    params = {"dense": {"kernel": jnp.zeros((4, 3), jnp.float32),
                        "bias": jnp.zeros(3, jnp.float32)}}
    like = {"params": params, "opt_state": optax.adam(1e-2).init(params),
            "table": jnp.zeros((2, 5), jnp.int32), "step": jnp.int32(0)}
    target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), like)
    out = {}
    with ocp.CheckpointManager(work) as mgr:
        steps, latest = list(mgr.all_steps()), mgr.latest_step()
        for step in steps:
            r = mgr.restore(step, args=ocp.args.StandardRestore(target))
            leaves = jax.tree_util.tree_leaves_with_path(r)
            want = [expected[f"{step}{jax.tree_util.keystr(p)}"] for p, _ in leaves]
            out[step] = {"n": len(leaves), "bit_equal": all(
                np.array_equal(np.asarray(l), w) and np.asarray(l).dtype == w.dtype
                for (_, l), w in zip(leaves, want)),
                "state": type(r["opt_state"][0]).__name__, "count": int(r["opt_state"][0].count)}
        untargeted = mgr.restore(latest)  # no target: the tree the metadata describes
    kernel = np.asarray(untargeted["params"]["dense"]["kernel"])
    print(json.dumps({"steps": steps, "latest": latest, "restored": out,
                      "untargeted": sorted(untargeted),
                      "untargeted_kernel": bool(np.array_equal(
                          kernel, expected["2['params']['dense']['kernel']"]))}))
"""


def test_checkpoint_written_by_jax_restores_bit_equal():
    # tests/data/orbax_jax holds steps 1 and 2 of a CheckpointManager written by JAX 0.10.2
    # (make_checkpoint.py there: adam on a 4x3 dense layer, an int32 table, the step), and
    # the leaves as JAX held them in expected.npz. Restored with abstract targets on
    # functrans, all 9 leaves of both steps are bit-equal (no arithmetic: the stored bytes),
    # as they are on JAX; restored without a target, the tree comes from the metadata.
    res = json.loads(run_as_jax(RESTORE_JAX_CHECKPOINT, str(GOLDEN)).strip().splitlines()[-1])
    assert res["steps"] == [1, 2] and res["latest"] == 2
    for step in ("1", "2"):
        got = res["restored"][step]
        assert got == {"n": 9, "bit_equal": True, "state": "ScaleByAdamState",
                       "count": int(step)}, got
    assert res["untargeted"] == ["opt_state", "params", "step", "table"]
    assert res["untargeted_kernel"]


WRITE_FOR_JAX = """
    import os, sys
    import numpy as np
    import jax, jax.numpy as jnp
    import orbax.checkpoint as ocp

    out = sys.argv[1]
    state = {"w": jnp.arange(12, dtype=jnp.float32).reshape(3, 4) / 3,
             "n": jnp.array([7, -2], jnp.int32), "s": jnp.float32(2.5)}
    with ocp.CheckpointManager(os.path.join(out, "ckpts")) as mgr:
        mgr.save(5, args=ocp.args.StandardSave(state))
    np.savez(os.path.join(out, "expected.npz"), **{k: np.asarray(v) for k, v in state.items()})
    print("written")
"""

RESTORE_ON_JAX = """
import json, os, sys
import numpy as np
import jax
import orbax.checkpoint as ocp
out = sys.argv[1]
expected = np.load(os.path.join(out, "expected.npz"))
target = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in expected.items()}
with ocp.CheckpointManager(os.path.join(out, "ckpts")) as mgr:
    r = mgr.restore(mgr.latest_step(), args=ocp.args.StandardRestore(target))
print(json.dumps({"version": jax.__version__, "equal": all(
    np.array_equal(np.asarray(r[k]), v) and r[k].dtype == v.dtype for k, v in expected.items())}))
"""


def _jax_python():
    # A Python with JAX and orbax (another virtual environment: functrans never imports jax).
    python = os.environ.get("FUNCTRANS_JAX_PYTHON")
    if not python:
        return None, "set FUNCTRANS_JAX_PYTHON to a Python with jax and orbax-checkpoint"
    probe = subprocess.run([python, "-c", "import jax, orbax.checkpoint"],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode:
        return None, f"FUNCTRANS_JAX_PYTHON={python} cannot import jax and orbax.checkpoint"
    return python, ""


def test_checkpoint_written_by_functrans_restores_on_jax(tmp_path):
    # functrans writes with orbax (zarr3 arrays in OCDBT, orbax's metadata naming devices
    # "cpu:0" as JAX does); JAX 0.10.2 restores the three leaves bit-equal.
    python, why = _jax_python()
    if python is None:
        pytest.skip(why)
    assert run_as_jax(WRITE_FOR_JAX, str(tmp_path)).strip().endswith("written")
    (tmp_path / "restore.py").write_text(RESTORE_ON_JAX)
    run = subprocess.run([python, str(tmp_path / "restore.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["equal"]


SHARDED_OVER_PROCESSES = """
import json, os, sys
import numpy as np
import jax
import orbax.checkpoint as ocp
from jax._src import distributed
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize()
root = sys.argv[1]
mesh = jax.make_mesh((4,), ("x",))  # two devices in each process
rows = NamedSharding(mesh, P("x"))
whole = np.arange(24, dtype=np.float32).reshape(8, 3) / 4

def state_at(step):
    w = jax.make_array_from_callback((8, 3), rows, lambda i: whole[i] + step)
    b = jax.device_put(np.array([1.5, -2.0, step], np.float32), NamedSharding(mesh, P()))
    ids = jax.make_array_from_callback((8,), rows,
                                       lambda i: np.arange(8, dtype=np.int32)[i] * (step + 1))
    return {"params": {"w": w, "b": b}, "ids": ids}

with ocp.CheckpointManager(os.path.join(root, "ckpts"),
                           options=ocp.CheckpointManagerOptions(max_to_keep=2)) as mgr:
    for step in range(3):
        mgr.save(step, args=ocp.args.StandardSave(state_at(step)))
    mgr.wait_until_finished()
    latest = mgr.latest_step()
    target = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding),
                          state_at(0))
    restored = mgr.restore(latest, args=ocp.args.StandardRestore(target))
    # the same checkpoint restored with w replicated: each process reads all of it
    target["params"]["w"] = jax.ShapeDtypeStruct((8, 3), np.float32,
                                                 sharding=NamedSharding(mesh, P()))
    replicated = mgr.restore(latest, args=ocp.args.StandardRestore(target))
    steps = list(mgr.all_steps())
expect = state_at(latest)
local_equal = all(
    np.array_equal(np.asarray(s.data), np.asarray(t.data)) and s.index == t.index
    for a, e in zip(jax.tree.leaves(restored), jax.tree.leaves(expect))
    for s, t in zip(a.addressable_shards, e.addressable_shards))
gathered = multihost_utils.process_allgather(restored["params"]["w"], tiled=True)
step_dir = os.path.join(root, "ckpts", str(latest), "default")
# One file per process: the two processes' standard outputs interleave under mpiexec.
with open(os.path.join(root, f"result_{jax.process_index()}.json"), "w") as out:
    out.write(json.dumps({
    "rank": jax.process_index(), "steps": steps, "latest": latest, "local_equal": local_equal,
    "client": distributed.global_state.client is not None,
    "spread": not restored["params"]["w"].is_fully_addressable,
    "w_equal": bool(np.array_equal(gathered, whole + latest)),
    "replicated_equal": all(np.array_equal(np.asarray(s.data), whole + latest)
                            for s in replicated["params"]["w"].addressable_shards),
    "process_files": sorted(d for d in os.listdir(step_dir) if d.startswith("ocdbt.process_"))}))
"""


@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpi extra's mpiexec; the README's "
                    "test command installs it")
def test_array_sharded_over_two_mpi_processes_saves_each_processs_shards(tmp_path):
    # Two processes with two CPU devices each; w (8x3 float32) and ids (int32) split by rows
    # over the four devices, b replicated. orbax saves steps 0-2 (each process writes the
    # shards it holds, into its own ocdbt.process_<i> files; process 0 commits after the
    # processes meet at the key-value store's barriers), keeps 1 and 2, and restores step 2
    # with the saved shardings (each process's blocks equal what it saved, bit for bit) and
    # with w replicated (each process reads the whole array). The values are exact (written
    # and read, no arithmetic). On JAX 0.10.2 (two processes joined by initialize's
    # coordinator address, gloo collectives) the program prints the same for both processes,
    # the two ocdbt.process_<i> directories included.
    (tmp_path / "prog.py").write_text(SHARDED_OVER_PROCESSES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([library_dir()] + sys.path),
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    run = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", "-m",
                          "functrans.as_jax", str(tmp_path / "prog.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    lines = [json.loads((tmp_path / f"result_{rank}.json").read_text()) for rank in (0, 1)]
    assert [r["rank"] for r in lines] == [0, 1]
    for r in lines:
        assert r["steps"] == [1, 2] and r["latest"] == 2 and r["client"] and r["spread"], r
        assert r["local_equal"] and r["w_equal"] and r["replicated_equal"], r
        assert r["process_files"] == ["ocdbt.process_0", "ocdbt.process_1"], r
    # JAX 0.10.2, one process, restores the checkpoint the two processes wrote (when a Python
    # with JAX is given: see _jax_python)
    python, _ = _jax_python()
    if python is not None:
        (tmp_path / "on_jax.py").write_text(RESTORE_SHARDED_ON_JAX)
        run = subprocess.run([python, str(tmp_path / "on_jax.py"), str(tmp_path / "ckpts")],
                             capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.split()[-1] == "True"


RESTORE_SHARDED_ON_JAX = """
import sys
import numpy as np
import jax
import orbax.checkpoint as ocp
one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
spec = lambda shape, dtype: jax.ShapeDtypeStruct(shape, dtype, sharding=one)
target = {"params": {"w": spec((8, 3), np.float32), "b": spec((3,), np.float32)},
          "ids": spec((8,), np.int32)}
with ocp.CheckpointManager(sys.argv[1]) as mgr:
    r = mgr.restore(2, args=ocp.args.StandardRestore(target))
whole = np.arange(24, dtype=np.float32).reshape(8, 3) / 4 + 2
print(np.array_equal(np.asarray(r["params"]["w"]), whole)
      and np.asarray(r["params"]["b"]).tolist() == [1.5, -2.0, 2.0]
      and np.asarray(r["ids"]).tolist() == [0, 3, 6, 9, 12, 15, 18, 21])
"""
