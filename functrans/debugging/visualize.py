"""``visualize_array_sharding`` / ``visualize_sharding``: which devices hold which block of a
1-D or 2-D array, drawn as a grid of boxes in plain text.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["sharding_grid", "visualize_array_sharding", "visualize_sharding"]


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
    from ..core.trace import Tracer
    if isinstance(arr, Tracer):
        raise TypeError("visualize_array_sharding: needs a concrete array; inside a "
                        "transformation values are traced and carry no sharding in functrans")
    visualize_sharding(np.shape(arr), getattr(arr, "sharding", None) or _default(), **kwargs)


def _default():
    from ..core.mesh import default_sharding
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
