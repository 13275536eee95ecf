"""Collectives that not every shard reaches: how they are described, detected and reported.

SPMD programs must run the same collectives in the same order on every shard. A collective in a
``lax.cond`` branch that only some shards take, or processes running different programs, would
otherwise leave the shards that did reach it waiting forever. Every exchange therefore carries
a *fingerprint* (the collective, its axes and parameters, its operands' shapes and dtypes); the
shards compare fingerprints where they meet, and a shard that finished its program or reached
another collective, or a process that did not arrive in time, is reported with :class:`CollectiveMismatchError`
naming the collective and the shards or processes involved.

How long a shard waits for the others is ``FUNCTRANS_COLLECTIVE_TIMEOUT`` (seconds, default
300): generous, because another process may still be compiling its program or loading data.

    >>> import numpy as np
    >>> describe(("psum", ("i",), (((3,), np.dtype("float32")),), ()))
    "psum over ('i',) of float32[3]"
"""
from __future__ import annotations

import os

from functrans.core.errors import ShardError

TIMEOUT_ENV = "FUNCTRANS_COLLECTIVE_TIMEOUT"
DEFAULT_TIMEOUT = 300.0


class CollectiveMismatchError(ShardError):
    """Shards or processes that do not all reach the same collective: one reached another
    collective, finished its program without it, or did not arrive within the timeout."""


def collective_timeout() -> float:
    """Seconds a shard waits at a collective for the others (``FUNCTRANS_COLLECTIVE_TIMEOUT``)."""
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return value


def fingerprint(name: str, names: tuple, args, params: dict) -> tuple:
    """What must agree between the shards meeting at collective ``name``: cheap to build and
    compare (a tuple); :func:`describe` makes it readable only when reporting a mismatch."""
    operands = tuple((getattr(a, "shape", ()), getattr(a, "dtype", type(a).__name__))
                     for a in args)
    rest = tuple(sorted((k, v) for k, v in params.items() if k != "axis_name"))
    return (name, names, operands, rest)


FINISHED = ("<finished>",)  # the fingerprint of a shard or process that completed its program
DEBUG_CALLBACK = ("debug_callback", (), (), ())  # shards meeting to print in order


def describe(fp) -> str:
    """A fingerprint in words: ``psum over ('i',) of float32[3]``."""
    if fp is None:
        return "an unknown point (no answer)"
    if fp == FINISHED:
        return "the end of its program"
    name, names, operands, rest = fp
    text = f"{name} over {names!r}" if names else name
    if operands:
        text += " of " + ", ".join(f"{dtype}{list(shape)}" for shape, dtype in operands)
    if rest:
        text += " (" + ", ".join(f"{k}={v!r}" for k, v in rest) + ")"
    return text


_ADVICE = ("every shard must run the same collectives in the same order (is a collective in a "
           "lax.cond branch that only some shards take, or do the processes run different "
           "programs?)")


def mismatch_error(where: str, seen: dict, step) -> CollectiveMismatchError:
    """The error for ``seen``: participant (``"shard 3"``, ``"process 1"``) -> fingerprint,
    where they do not all agree, at collective number ``step`` of the SPMD call (None: the
    participants' names say it)."""
    by_fp: dict = {}
    for who, fp in seen.items():
        by_fp.setdefault(fp, []).append(who)
    parts = [f"{', '.join(map(str, whos))} at {describe(fp)}" for fp, whos in by_fp.items()]
    at = "" if step is None else f" at collective #{step} of this pmap/shard_map call"
    return CollectiveMismatchError(
        f"divergent collectives {where}{at}: {'; '.join(parts)}; {_ADVICE}")

