"""JAX's libraries for the ecosystem tests, installed without JAX.

Their wheels declare ``jax``/``jaxlib`` as dependencies, so they are installed with
``pip install --no-deps`` into a directory of their own (pinned versions; once per machine,
under functrans's cache directory); their other dependencies come from the ``[ecosystem]``
extra. Programs using them run in a child process under ``python -m functrans.as_jax`` with
that directory on ``PYTHONPATH``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

PINS = ("optax==0.2.8", "chex==0.1.92", "equinox==0.13.8", "flax==0.12.8", "numpyro==0.22.0",
        "blackjax==1.7.1",
        # The next ring: the versions pip picks beside JAX 0.10.2 (TFP's JAX substrate is only
        # released as tfp-nightly for this JAX; tensorflow-probability 0.25 fails on it).
        "diffrax==0.7.2", "lineax==0.1.1", "optimistix==0.1.0", "orbax-checkpoint==0.12.8",
        "dm-haiku==0.0.17", "tfp-nightly==0.26.0.dev20261027", "distrax==0.1.9",
        "jraph==0.0.6.dev0", "jax-md==0.2.29", "e3nn-jax==0.21.0", "jaxopt==0.8.5",
        "evosax==0.3.2", "einops==0.8.2")
"""The libraries tested, at the versions tested (their JAX-free dependencies are in the
``[ecosystem]`` extra of pyproject.toml)."""


def library_dir() -> str:
    """The directory holding :data:`PINS`, installed on first use."""
    from functrans.transforms.lowering.cache_dir import cache_dir
    key = hashlib.sha256("\n".join(PINS).encode()).hexdigest()[:12]
    target = os.path.join(os.path.dirname(cache_dir()), f"ecosystem-{key}")
    if os.path.isdir(target):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = tempfile.mkdtemp(prefix="ecosystem-", dir=os.path.dirname(target))
    run = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                          "--disable-pip-version-check", "--target", staging, *PINS],
                         capture_output=True, text=True, timeout=600)
    if run.returncode:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"could not install {' '.join(PINS)}: {run.stderr[-2000:]}")
    try:
        os.rename(staging, target)  # atomic: a concurrent installer's copy may win
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def run_as_jax(code: str, *args: str, timeout: float = 600, env: dict | None = None) -> str:
    """Run ``code`` under ``python -m functrans.as_jax`` with the libraries importable; its
    standard output (an AssertionError with its stderr if it fails)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "program.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(code))
        path = os.pathsep.join([library_dir()] + sys.path)
        child_env = dict(os.environ, PYTHONPATH=path, **(env or {}))
        run = subprocess.run([sys.executable, "-m", "functrans.as_jax", script, *args],
                             env=child_env, cwd=tmp, capture_output=True, text=True,
                             timeout=timeout)
    if run.returncode:
        raise AssertionError(f"the program failed:\n{run.stderr[-4000:]}")
    return run.stdout


def all_close(got, want, rel: float, abs_: float = 0.0) -> bool:
    """Whether the numbers ``got`` match ``want`` one by one (same length), each within
    ``rel * |want| + abs_``: the comparison of a program's printed values with JAX's."""
    got, want = list(got), list(want)
    return len(got) == len(want) and all(abs(g - w) <= rel * abs(w) + abs_
                                         for g, w in zip(got, want))
