"""Run every benchmark: ``python benchmarks/run.py`` (JAX columns appear when jax is
installed: ``pip install -e ".[bench]"``)."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_autodiff  # noqa: E402
import bench_control_flow  # noqa: E402
import bench_conv  # noqa: E402
import bench_jit  # noqa: E402
import bench_linalg  # noqa: E402
import bench_spmd  # noqa: E402
import timing  # noqa: E402


def main() -> None:
    for module in (bench_autodiff, bench_jit, bench_control_flow, bench_linalg, bench_conv,
                   bench_spmd):
        print(f"\n== {module.__name__} ==")
        print(timing.run(module))
    print("\n(fast-math details: python benchmarks/bench_fastmath.py)")


if __name__ == "__main__":
    main()
