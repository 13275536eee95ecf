"""``vectorize``: a function on scalars (or on core dimensions named by a gufunc signature)
applied over broadcast leading dimensions, built on ``vmap`` as JAX's ``jnp.vectorize``.

    >>> fnp.vectorize(lambda a, b: fnp.maximum(a, b))(fnp.arange(3.0), 1.0)
    Array([1., 1., 2.], dtype=float64)
"""
from __future__ import annotations

import functools
import re

import numpy as np

from ..core.trace import get_aval
from ._core import asarray

__all__ = ["vectorize"]

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^({_ARGS})->({_ARGS})$")


def _parse_signature(signature):
    """``"(m,n),(n)->(m)"`` -> ([("m", "n"), ("n",)], [("m",)]), as NumPy's parser."""
    sig = re.sub(r"\s+", "", signature)
    if not _SIGNATURE.match(sig):
        raise ValueError(f"fnp.vectorize: not a valid gufunc signature: {signature!r}")
    ins, outs = sig.split("->")

    def parse(part):
        return [tuple(re.findall(_DIM, core)) for core in re.findall(_CORE, part)]
    return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """``pyfunc`` mapped over the broadcast leading dimensions of its arguments with ``vmap``.

    Without ``signature`` every argument is a scalar for ``pyfunc``; with a gufunc signature
    such as ``"(n),(n)->()"`` the trailing core dimensions are passed whole (sizes of the same
    name must agree; outputs are checked against it). ``excluded`` names positional indices or
    keyword names passed unchanged; other keyword arguments are passed unchanged too, as JAX.
    Python control flow on values is not allowed inside (``pyfunc`` is traced by ``vmap``).

    >>> dot = fnp.vectorize(lambda a, b: fnp.sum(a * b), signature="(n),(n)->()")
    >>> dot(fnp.ones((2, 3)), fnp.arange(3.0))
    Array([3., 3.], dtype=float64)
    >>> fnp.vectorize(lambda x, p: x ** p, excluded={1})(fnp.arange(3.0), 2)
    Array([0., 1., 4.], dtype=float64)
    """
    if not callable(pyfunc):
        raise TypeError(f"fnp.vectorize: expected a callable, got {type(pyfunc).__name__}")
    excluded = frozenset(excluded)
    for e in excluded:
        if not isinstance(e, (int, str)):
            raise TypeError(f"fnp.vectorize: excluded must hold argument indices or names, "
                            f"got {e!r}")
    parsed = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        from ..transforms.batching import vmap
        from .shape_ops import expand_dims, squeeze
        fixed = {i: a for i, a in enumerate(args) if i in excluded or a is None}
        dynamic = [asarray(a) for i, a in enumerate(args) if i not in fixed]
        positions = [i for i in range(len(args)) if i not in fixed]

        def call(*dyn):
            full = list(args)
            for i, v in zip(positions, dyn):
                full[i] = v
            return pyfunc(*full, **kwargs)

        if parsed is None:
            in_core, out_core = [()] * len(dynamic), None
        else:
            in_core, out_core = parsed
            if len(in_core) != len(args):
                raise TypeError(f"fnp.vectorize: the signature {signature!r} has "
                                f"{len(in_core)} inputs, got {len(args)} arguments")
            if any(in_core[i] for i in fixed if args[i] is None):
                raise ValueError("fnp.vectorize: a None argument must have scalar core dims")
            in_core = [in_core[i] for i in positions]
        sizes = {}
        loop_shapes = []
        for k, (a, core) in enumerate(zip(dynamic, in_core)):
            shape = get_aval(a).shape
            if len(shape) < len(core):
                raise ValueError(f"fnp.vectorize: argument {positions[k]} has shape {shape}, "
                                 f"fewer dimensions than its core dimensions {core}")
            for name, n in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"fnp.vectorize: inconsistent size for core dimension "
                                     f"{name!r}: {sizes[name]} vs {n}")
            loop_shapes.append(shape[:len(shape) - len(core)])
        try:
            loop = np.broadcast_shapes(*loop_shapes) if loop_shapes else ()
        except ValueError:
            raise ValueError(f"fnp.vectorize: the arguments' loop dimensions {loop_shapes} do "
                             "not broadcast together") from None

        checked = call if out_core is None else _checked(call, out_core, sizes, signature)
        # vmap one loop dimension at a time (innermost first); arguments of size 1 there are
        # squeezed and left unbatched, so no argument is broadcast in memory.
        squeezed, filled = [], []
        for a, shape in zip(dynamic, loop_shapes):
            ones = tuple(i for i, n in enumerate(shape) if n == 1)
            squeezed.append(squeeze(a, ones) if ones else a)
            filled.append((1,) * (len(loop) - len(shape)) + shape)
        fn, expand = checked, []
        for d in reversed(range(len(loop))):
            in_axes = tuple(None if s[d] == 1 else 0 for s in filled)
            if all(ax is None for ax in in_axes):
                expand.append(d)
            else:
                fn = vmap(fn, in_axes)
        out = fn(*squeezed)
        if not expand:
            return out
        if isinstance(out, tuple):
            return tuple(expand_dims(o, tuple(sorted(expand))) for o in out)
        return expand_dims(out, tuple(sorted(expand)))
    return wrapped


def _checked(call, out_core, sizes, signature):
    def run(*dyn):
        out = call(*dyn)
        outs = out if isinstance(out, tuple) else (out,)
        if len(out_core) != len(outs) or (len(out_core) > 1 and not isinstance(out, tuple)):
            raise ValueError(f"fnp.vectorize: the function returned {len(outs)} output(s), the "
                             f"signature {signature!r} declares {len(out_core)}")
        for k, (o, core) in enumerate(zip(outs, out_core)):
            shape = get_aval(asarray(o)).shape
            if len(shape) != len(core):
                raise ValueError(f"fnp.vectorize: output {k} has shape {shape}, the signature "
                                 f"{signature!r} declares core dimensions {core}")
            for name, n in zip(core, shape):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"fnp.vectorize: output {k} has size {n} for core "
                                     f"dimension {name!r}, expected {sizes[name]}")
        return out
    return run

