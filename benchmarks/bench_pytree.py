"""Pytree functions' per-call time: tree_flatten, tree_unflatten, tree_map and a jit-style
flatten + hash + cache lookup, on an nnx-like state (~30 leaves: dicts of layers' params,
adam's moments, a registered dataclass node) and on a 1000-leaf tree, with optree's C++
traversal and with the pure-Python one, alternating in one process (min of many rounds: the
machine may be busy).

    python benchmarks/bench_pytree.py [--rounds 30]
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import functrans.tree_util as tu
from functrans.core import pytree


@tu.register_dataclass
@dataclasses.dataclass
class AdamState:
    count: object
    mu: object
    nu: object


def nnx_like():
    def layer(n):
        return {"kernel": np.zeros((n, n), np.float32), "bias": np.zeros(n, np.float32)}
    params = {f"layer{i}": layer(8) for i in range(3)}
    return {"model": params, "opt": AdamState(np.zeros((), np.int32), params, params),
            "step": np.zeros((), np.int32), "rngs": None}


def wide():
    return {f"block{i:02d}": [(np.float32(j), {"w": np.float32(j), "b": None})
                              for j in range(10)] for i in range(50)}


def timed(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


def cases(tree):
    leaves, td = tu.tree_flatten(tree)
    cache = {}

    def jit_key():  # what a jitted call does with its arguments' structure
        lv, t = pytree.tree_flatten(tree)
        cache.get((t, len(lv)))
    return {"tree_flatten": lambda: tu.tree_flatten(tree),
            "tree_unflatten": lambda: tu.tree_unflatten(td, leaves),
            "tree_map": lambda: tu.tree_map(lambda x: x, tree),
            "tree_map (2 trees)": lambda: tu.tree_map(lambda x, y: x, tree, tree),
            "flatten+hash": jit_key}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    modes = ["python"]
    if hasattr(pytree, "use_optree") and pytree.use_optree(True):
        modes.append("optree")
    for name, tree, n in (("nnx-like", nnx_like(), 200), ("1000 leaves", wide(), 10)):
        print(f"{name}: {len(tu.tree_leaves(tree))} leaves; us per call (min of "
              f"{args.rounds} rounds)")
        best = {}
        for _ in range(args.rounds):
            for mode in modes:  # alternating, so that the machine's drift hits both
                if hasattr(pytree, "use_optree"):
                    pytree.use_optree(mode == "optree")
                for case, f in cases(tree).items():
                    t = timed(f, n)
                    best[mode, case] = min(best.get((mode, case), t), t)
        for case in cases(tree):
            row = "  ".join(f"{m} {best[m, case]:8.2f}" for m in modes)
            ratio = (f"  ({best['python', case] / best['optree', case]:.1f}x)"
                     if "optree" in modes else "")
            print(f"  {case:20s} {row}{ratio}")


if __name__ == "__main__":
    main()
