"""``python -m functrans.demo --quick`` runs end to end in a fresh process and reaches the
accuracy the README promises on the held-out digits."""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

ACCURACY_AT_LEAST = 0.90


def _product_defaults(**extra):
    """This environment without the suite's FUNCTRANS_JIT_TIERED=0: the demo runs as users
    run it (tiered jit on)."""
    env = {k: v for k, v in os.environ.items() if k != "FUNCTRANS_JIT_TIERED"}
    return {**env, **extra}


@pytest.mark.timeout(600)
def test_quick_demo_trains_an_accurate_classifier(tmp_path):
    plot = tmp_path / "curves.png"
    out = subprocess.run([sys.executable, "-m", "functrans.demo", "--quick", "--plot", str(plot)],
                         capture_output=True, text=True, timeout=540, cwd=tmp_path,
                         env=_product_defaults(PYTHONUNBUFFERED="1", MPLBACKEND="Agg"))
    assert out.returncode == 0, out.stdout + out.stderr
    accuracy = re.search(r"^test accuracy: ([0-9.]+)", out.stdout, re.MULTILINE)
    assert accuracy, out.stdout
    assert float(accuracy.group(1)) >= ACCURACY_AT_LEAST, out.stdout
    assert f"plot: {plot}" in out.stdout and plot.stat().st_size > 10_000
    assert "equals the single-device step" in out.stdout  # pmap == one device, checked there
    for section in ("[jit]", "[train]", "[vmap]", "[pmap]"):
        assert section in out.stdout
