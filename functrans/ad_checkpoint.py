"""``functrans.ad_checkpoint``: rematerialization (``jax.ad_checkpoint``): ``checkpoint`` with
JAX's policies, ``checkpoint_name`` and ``print_saved_residuals`` (implemented in
``functrans/checkpointing/``).

    >>> W, x = fnp.ones((3, 3)), fnp.ones(3)
    >>> f = lambda W, x: fnp.sum(fnp.sin(W @ fnp.sin(W @ x)))
    >>> print_saved_residuals(checkpoint(f, policy=checkpoint_policies.dots_saveable), W, x)
    f64[3,3] from the argument W
    f64[3] from the argument x
    f64[3] output of dot_general from ... (in <lambda>)
    f64[3] output of dot_general from ... (in <lambda>)

(JAX's 0.10 release removed ``jax.ad_checkpoint.checkpoint`` and ``remat`` in favour of
``jax.checkpoint``; they are kept here for code written against earlier releases.)
"""
from __future__ import annotations

from .checkpointing.api import checkpoint, remat
from .checkpointing.policies import (Offloadable, Recompute, Saveable,  # noqa: F401
                                     checkpoint_name, checkpoint_policies,
                                     everything_saveable, nothing_saveable)
from .checkpointing.residuals import print_saved_residuals

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat"]
