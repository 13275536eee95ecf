"""``python -m functrans.demo --distributed``: data-parallel, FSDP, tensor-parallel and
pipeline training of the demo's MLP, each step equal to the single-device step, in one
process with CPU devices and under ``mpiexec -n 2``."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import functrans as ft
from functrans.demos import distributed as dd
from functrans import lax

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
needs_mpi = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="needs the mpi extra's "
                               "mpiexec; the README's test command installs it")

N = 4
SMALL = dict(steps=2, batch_size=32, microbatches=2)


@pytest.fixture(scope="module")
def rows():
    """Every variant on 4 CPU devices, 2 steps of batch 32."""
    with ft.config.override(num_cpu_devices=N):
        yield {r["name"]: r for r in dd.run(N, **SMALL)}


@pytest.mark.parametrize("name", ["data parallel", "FSDP (ZeRO-3)", "tensor parallel",
                                  "pipeline (2 stages)"])
def test_each_variant_steps_like_one_device(rows, name):
    r = rows[name]
    assert r["dparams"] <= dd.TOLERANCE and r["dloss"] <= dd.TOLERANCE, r
    assert r["n"] == (2 if name.startswith("pipeline") else N)


def test_what_each_device_holds(rows):
    whole = 2 * 4 * (64 * 128 + 128 + 128 * 10 + 10)  # float32 params + momentum
    assert rows["single device"]["per_device"] == whole
    assert rows["data parallel"]["per_device"] == whole
    # FSDP: 1/N of each layer's flat buffer (layer 2's 1,290 padded to 1,292), plus the
    # largest layer (64 x 128 + 128 floats) gathered during the step.
    assert rows["FSDP (ZeRO-3)"]["per_device"] == 2 * 4 * (8320 + 1292) // N
    assert rows["FSDP (ZeRO-3)"]["gathered"] == 4 * 8320
    # Tensor parallel: 1/N of w1, b1 and w2, and a copy of b2.
    assert rows["tensor parallel"]["per_device"] == 2 * 4 * ((8192 + 128 + 1280) // N + 10)
    # Pipeline: a stage's buffer, stage 1 padded to stage 0's size.
    assert rows["pipeline (2 stages)"]["per_device"] == 2 * 4 * 8320
    for r in rows.values():  # one process holds every device's blocks
        assert r["per_process"] == r["per_device"] * r["n"]


def test_fsdp_gathers_and_reduce_scatters_per_layer(rows):
    counts = dd.collectives([rows["FSDP (ZeRO-3)"], rows["pipeline (2 stages)"]])
    assert counts["FSDP (ZeRO-3)"]["all_gather"] == 4  # 2 layers, re-gathered in backward
    assert counts["FSDP (ZeRO-3)"]["psum_scatter"] == 2
    assert counts["pipeline (2 stages)"]["ppermute"] == 2 * SMALL["microbatches"]


def test_a_wrong_gradient_is_caught():
    """Tensor parallelism without summing the copied bias's gradient: 1/N of it."""
    def wrong_step(params, velocity, x, y, lr):
        def local_loss(p):
            (w1, b1), (w2, b2) = p
            z = lax.psum(ft.nn.relu(x @ w1 + b1) @ w2, dd.AXIS) + b2
            return dd.cross_entropy(z, y)
        value, grads = ft.value_and_grad(lambda p: local_loss(p) / N)(params)
        params, velocity = dd.sgd(params, velocity, grads, lr)
        return params, velocity, value * N

    with ft.config.override(num_cpu_devices=N):
        params = [(np.asarray(w), np.asarray(b))
                  for w, b in dd.init_params(ft.random.key(0))]
        batches = dd.train_batches(32, 2, 0)
        reference, _ = dd.reference_run(params, batches, np.float32(0.05), timing_repeats=0)
        tp = next(v for v in dd.variants(N) if v.name == "tensor parallel")
        tp.step = wrong_step
        r = dd.run_variant(tp, params, batches, np.float32(0.05), reference, timing_repeats=0)
    assert r["dparams"] > 100 * dd.TOLERANCE


def _env():
    return dict(os.environ, PYTHONUNBUFFERED="1")


def _agreement(stdout, rank, nproc):
    found = re.search(rf"process {rank} of {nproc}: all variants agree with the single-device "
                      r"step \(max \|difference\| ([0-9.e+-]+)\)", stdout)
    assert found, stdout
    return float(found.group(1))


@pytest.mark.timeout(300)
def test_demo_flag_runs_in_one_process():
    out = subprocess.run([sys.executable, "-m", "functrans.demo", "--distributed",
                          "--devices", "2", "--steps", "2"],
                         capture_output=True, text=True, timeout=240, env=_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert _agreement(out.stdout, 0, 1) <= dd.TOLERANCE
    for name in ("data parallel", "FSDP (ZeRO-3)", "tensor parallel", "pipeline (2 stages)"):
        assert name in out.stdout


@needs_mpi
@pytest.mark.timeout(300)
def test_two_processes_each_holding_their_shards_agree():
    out = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", "-m",
                          "functrans.demo", "--distributed", "--steps", "3"],
                         capture_output=True, text=True, timeout=240, env=_env())
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert _agreement(out.stdout, rank, 2) <= dd.TOLERANCE
    assert out.stdout.count("variant ") == 1  # only process 0 prints the table
    # One device per process: FSDP's row shows half of the state per process.
    fsdp = re.search(r"FSDP \(ZeRO-3\)\s+2\s+\S+\s+\S+\s+([\d,]+) B\s+50%", out.stdout)
    assert fsdp and int(fsdp.group(1).replace(",", "")) == 2 * 4 * (8320 + 1290) // 2, \
        out.stdout
