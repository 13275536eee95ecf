"""Checkpoint policies (``jax.checkpoint_policies``) and ``checkpoint_name``.

A policy is called as ``policy(prim, *input_avals, **params)`` for each equation of a
checkpointed function and says whether its outputs may be saved for the backward pass
(``True``/:data:`Saveable`/:class:`Offloadable`) or must be recomputed
(``False``/:data:`Recompute`)::

    >>> f = ft.checkpoint(lambda W, x: fnp.sin(W @ fnp.sin(W @ x)),
    ...                   policy=checkpoint_policies.dots_saveable)

``checkpoint_name(x, name)`` marks a value for the name-based policies. Traced, the mark is an
identity ``custom_jvp_call`` equation whose rule is named ``checkpoint_name:<name>`` (jit
inlines it away); evaluated eagerly it returns ``x`` as it is.
"""
from __future__ import annotations

import re
import types
from typing import NamedTuple

from ..core.ir import Eqn
from ..core.trace import EVAL_TRACE, _state
from ..primitives.convolution import conv_general_dilated_p
from ..primitives.linalg import dot_general_p
from ..transforms.autodiff.custom import custom_jvp, custom_jvp_call_p
from ..core.tree import tree_map


class _RecomputeType:
    def __repr__(self):
        return "Recompute"


class _SaveableType:
    def __repr__(self):
        return "Saveable"


Recompute = _RecomputeType()
"""A policy's answer: recompute this equation's outputs in the backward pass."""
Saveable = _SaveableType()
"""A policy's answer: the backward pass may read this equation's outputs."""


class Offloadable(NamedTuple):
    """A policy's answer: save the outputs in memory space ``dst`` (moved from ``src``).
    functrans has one memory space, so offloaded values are simply saved."""
    src: str
    dst: str


class _NamePrimitive:
    """What policies see as the primitive of a ``checkpoint_name`` mark (JAX's ``name``)."""

    name = "name"

    def __repr__(self):
        return "name"


name_p = _NamePrimitive()

_MARK = "checkpoint_name:"
_MARKED = re.compile(r"^custom_jvp\(" + re.escape(_MARK) + r"(.*)\)$")
_markers: dict = {}


def _marker(name: str) -> custom_jvp:
    """The identity function marking values as ``name``. A custom_jvp function: the mark
    stays on the primal value under differentiation (the tangent passes by it), so the
    linear program a checkpoint recomputes never contains it."""
    mark = _markers.get(name)
    if mark is None:
        def identity(x):
            return x

        def rule(primals, tangents):
            return mark(primals[0]), tangents[0]

        identity.__name__ = identity.__qualname__ = _MARK + name
        rule.__name__ = rule.__qualname__ = _MARK + name
        mark = _markers[name] = custom_jvp(identity)
        mark.defjvp(rule)
    return mark


def checkpoint_name(x, name: str):
    """Mark ``x`` (an array or a pytree of arrays) as ``name`` for the name-based
    checkpoint policies; returns ``x``'s value unchanged.

    >>> f = lambda x: checkpoint_name(fnp.sin(x), "h") * 2.0
    >>> print(ft.make_jaxpr(f)(1.0))  # doctest: +ELLIPSIS
    { lambda ; a:f64[]. let
        b:f64[] = sin a
        c:f64[] = custom_jvp_call[
          call_jaxpr={ lambda ; d:f64[]. let  in (d,) }
          jvp=checkpoint_name:h
          ...
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a string, got {type(name).__name__} "
                        f"{name!r:.40}")
    if _state.trace is EVAL_TRACE:
        return x
    return tree_map(_marker(name), x)


def marked_name(eqn: Eqn) -> str | None:
    """The name of a ``checkpoint_name`` mark (also once transformed), else None."""
    if eqn.prim is not custom_jvp_call_p:
        return None
    match = _MARKED.match(getattr(eqn.params["jvp"], "what", ""))
    return None if match is None else match.group(1)


def saveable(policy, eqn: Eqn) -> bool:
    """Whether ``policy`` lets the backward pass read ``eqn``'s outputs."""
    avals = [x.aval for x in eqn.inputs]
    name = marked_name(eqn)
    if name is not None:
        answer = policy(name_p, *avals, name=name)
    else:
        answer = policy(eqn.prim, *avals, **eqn.params)
    if answer is True or answer is Saveable or isinstance(answer, Offloadable):
        return True
    if answer is False or answer is Recompute or answer is None:
        return False
    raise TypeError(f"checkpoint policy {policy!r} returned {answer!r} for {eqn.prim}; a policy "
                    "returns a bool, Saveable, Recompute or Offloadable")


# ---- the policies -------------------------------------------------------------------------------
def everything_saveable(*_, **__) -> bool:
    """Save every value: as if ``checkpoint`` were not used at all."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Recompute every value from the checkpointed function's inputs (``checkpoint``'s
    default)."""
    return False


class _DotsSaveable:
    """Save the outputs of matrix products (``dot_general``; with batch dimensions only if
    ``no_batch_dims`` is off) and, unless restricted to products without batch dimensions,
    convolutions."""

    def __init__(self, only_if_no_batch_dims: bool):
        self.only_if_no_batch_dims = only_if_no_batch_dims

    def __call__(self, prim, *avals, **params):
        if self.only_if_no_batch_dims:
            if prim is dot_general_p:
                (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
                return not lhs_batch and not rhs_batch
            return False
        return prim is dot_general_p or prim is conv_general_dilated_p

    def __repr__(self):
        return ("dots_with_no_batch_dims_saveable" if self.only_if_no_batch_dims
                else "dots_saveable")


dots_saveable = checkpoint_dots = _DotsSaveable(False)
dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = _DotsSaveable(True)


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    """``dots_with_no_batch_dims_saveable``, offloading the products to ``offload_dst``
    (functrans has one memory space: they are saved)."""
    def policy(prim, *avals, **params):
        if dots_with_no_batch_dims_saveable(prim, *avals, **params):
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


def save_anything_except_these_names(*names_not_to_save):
    """Save every value. (JAX's release this follows ignores the names too.)"""
    del names_not_to_save
    return everything_saveable


class _Names:
    """Save the values marked with ``checkpoint_name`` whose names are (``keep=True``) or
    are not (``keep=False``) in ``names``; recompute everything else."""

    def __init__(self, names, keep: bool):
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"checkpoint names must be strings, got {type(n).__name__}")
        self.names, self.keep = frozenset(names), keep

    def __call__(self, prim, *avals, **params):
        return prim is name_p and (params["name"] in self.names) == self.keep


def save_only_these_names(*names_which_can_be_saved):
    """Save only values marked by ``checkpoint_name`` with one of these names."""
    return _Names(names_which_can_be_saved, keep=True)


def save_any_names_but_these(*names_not_to_save):
    """Save only values marked by ``checkpoint_name``, except those with these names."""
    return _Names(names_not_to_save, keep=False)


def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                      offload_src, offload_dst):
    """Save the named values of the first list and offload those of the second (saved as
    well here: functrans has one memory space); the two lists must not overlap."""
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    if saved & offloaded:
        raise ValueError("names_which_can_be_saved and names_which_can_be_offloaded must not "
                         f"overlap; both contain {sorted(saved & offloaded)}")

    def policy(prim, *avals, **params):
        if prim is name_p and params["name"] in saved:
            return Saveable
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


def save_from_both_policies(policy_1, policy_2):
    """Save what either policy saves (both must answer with bools)."""
    def policy(prim, *avals, **params):
        out_1, out_2 = policy_1(prim, *avals, **params), policy_2(prim, *avals, **params)
        if not (isinstance(out_1, bool) and isinstance(out_2, bool)):
            raise ValueError(f"save_from_both_policies combines policies that return bools, got "
                             f"{out_1!r} and {out_2!r}; write the combined policy directly")
        return out_1 or out_2
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=checkpoint_dots_with_no_batch_dims,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)
"""JAX's checkpoint policies by name (``jax.checkpoint_policies``)."""
