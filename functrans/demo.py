"""The functrans demo: ``python -m functrans.demo`` trains a digit classifier end to end.

A 64-128-10 MLP written with ``functrans.numpy`` learns the UCI handwritten digits shipped
in ``functrans/data`` (1,797 8x8 images; no download), showing ``jit(value_and_grad)``,
``vmap(grad)`` per-example gradients and DP-SGD, and ``pmap`` data parallelism, with a
progress bar and a plot (:mod:`functrans.demos.single_device`; ``--help`` lists its options).

``python -m functrans.demo --distributed`` trains the same model data-parallel, FSDP,
tensor-parallel and as a two-stage pipeline, each step checked against one device, in one
process or under ``mpiexec -n 2 python -m mpi4py -m functrans.demo --distributed``
(:mod:`functrans.demos.distributed`; ``--distributed --help`` lists its options).

The model and its training steps are :mod:`functrans.demos.mlp`'s. tqdm and matplotlib come
with ``pip install -e ".[demo]"``; only the single-device demo imports them, when it runs.
"""
from __future__ import annotations

import sys

from functrans.demos import distributed, single_device


def main(argv=None):
    """Run the demo: the single-device one (returns the final test accuracy), or with
    ``--distributed`` the parallel one (returns its table's rows)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--distributed" in argv:  # before parse_args: its default --devices counts the
        # devices, and under mpiexec they must be set up (one per process) before that
        return distributed.main([a for a in argv if a != "--distributed"])
    return single_device.main(argv)


if __name__ == "__main__":
    main()
