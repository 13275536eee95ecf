"""Looking inside running programs: ``debug.print``, ``debug.callback`` and
``debug.breakpoint`` (an interactive prompt on the caller's frames: ``functrans._debugger``),
as in JAX; and ``visualize_array_sharding``, which draws which devices hold which block.

They work eagerly and under jit, vmap (once per batch element), grad (on primal values),
control flow, and in the shards of pmap/shard_map (every shard, in shard order)::

    >>> ft.vmap(lambda x: ft.debug.print("x={x}", x=x))(fnp.arange(2))
    x=0
    x=1
"""
from __future__ import annotations

import sys

import numpy as np

from ._debugger import breakpoint  # noqa: F401  (jax.debug.breakpoint)
from .primitives.callback import Callback, debug_callback_p
from .core.tree import tree_flatten


def callback(fn, *args, ordered=False, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` with the concrete values of the array arguments, for its
    side effect (its return value is ignored).

    >>> seen = []
    >>> _ = ft.jit(lambda x: ft.debug.callback(seen.append, x) or x)(fnp.ones(2))
    >>> seen
    [Array([1., 1.], dtype=float64)]
    """
    if not callable(fn):
        raise TypeError(f"debug.callback: expected a callable, got {type(fn).__name__}")
    flat, in_tree = tree_flatten((args, kwargs))
    debug_callback_p.bind(*flat, callback=Callback(fn, in_tree))


def print(fmt: str, *args, ordered=False, **kwargs) -> None:  # noqa: A001 - JAX's name
    """Print ``fmt.format(*args, **kwargs)`` with the values the program computes.

    >>> ft.jit(lambda x: ft.debug.print("sum: {}", x.sum()))(fnp.arange(4))
    sum: 6
    """
    def show(*a, **k):
        a = [np.asarray(v) for v in a]
        k = {n: np.asarray(v) for n, v in k.items()}
        # One write per line: lines of several processes sharing a pipe stay whole.
        sys.stdout.write(fmt.format(*a, **k) + "\n")
        sys.stdout.flush()
    callback(show, *args, **kwargs)


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print how the blocks of the 1-D or 2-D array ``arr`` map to devices: a grid of boxes,
    each labelled with the devices holding that block ("CPU 0,2": replicated on both).

    JAX draws the same grid with ``rich``, boxes scaled to the array's shape; this is plain
    text, one box size for all, the options (``use_color``, ``scale``, ...) accepted and unused.

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> visualize_array_sharding(ft.device_put(fnp.zeros(4), ft.NamedSharding(mesh, P("x"))))
    ┌───────┬───────┐
    │ CPU 0 │ CPU 1 │
    └───────┴───────┘
    """
    from .core.trace import Tracer
    if isinstance(arr, Tracer):
        raise TypeError("visualize_array_sharding: needs a concrete array; inside a "
                        "transformation values are traced and carry no sharding in functrans")
    visualize_sharding(np.shape(arr), getattr(arr, "sharding", None) or _default(), **kwargs)


def _default():
    from .core.mesh import default_sharding
    return default_sharding()


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None) -> None:
    """Print the device grid of an array of ``shape`` placed by ``sharding`` (see
    ``visualize_array_sharding``).

    >>> visualize_sharding((4,), ft.sharding.SingleDeviceSharding(ft.devices()[1]))
    ┌───────┐
    │ CPU 1 │
    └───────┘
    """
    sys.stdout.write(sharding_grid(shape, sharding) + "\n")


def sharding_grid(shape, sharding) -> str:
    """The text ``visualize_sharding`` prints."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"visualize_sharding: only 1-D and 2-D shapes can be drawn, got "
                         f"shape {shape}")
    blocks: dict = {}  # ((row start, stop), (column start, stop)) -> devices
    for dev, index in sharding.devices_indices_map(shape).items():
        spans = [s.indices(n)[:2] for s, n in zip(index, shape)]
        key = ((0, 1), spans[0]) if len(shape) == 1 else tuple(spans)
        blocks.setdefault(key, []).append(dev)
    rows = sorted({r for r, _ in blocks})
    cols = sorted({c for _, c in blocks})
    labels = {k: f"{devs[0].platform.upper()} " + ",".join(str(d.id) for d in sorted(
        devs, key=lambda d: d.id)) for k, devs in blocks.items()}
    width = max(len(t) for t in labels.values()) + 2
    pad = [] if len(shape) == 1 else [""]  # 2-D boxes get a blank line above and below

    def rule(left, mid, right):
        return left + mid.join("─" * width for _ in cols) + right

    lines = [rule("┌", "┬", "┐")]
    for i, r in enumerate(rows):
        for text in pad + ["label"] + pad:
            cells = [(labels.get((r, c), "") if text else "").center(width) for c in cols]
            lines.append("│" + "│".join(cells) + "│")
        lines.append(rule("├", "┼", "┤") if i + 1 < len(rows) else rule("└", "┴", "┘"))
    return "\n".join(lines)
