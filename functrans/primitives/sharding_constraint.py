"""``sharding_constraint``: a value's sharding asked for inside a traced program.

``y = sharding_constraint[sharding=NamedSharding(mesh, spec)] x`` is the identity on values; it
tells jit's partitioner (``transforms/partition``) to lay ``x`` out as ``spec`` says at this
point of the program. ``with_sharding_constraint`` binds it under a transformation when the
sharding splits over more than one device. Programs that are not partitioned drop it before
they compile (a lowering that is the identity). It is linear: tangents and cotangents get the
same constraint, and a batch dimension stays unsplit::

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> s = ft.NamedSharding(mesh, P("x"))
    >>> print(ft.make_jaxpr(lambda v: lax.with_sharding_constraint(v, s))(fnp.ones(4)))
    { lambda ; a:f64[4]. let
        b:f64[4] = sharding_constraint[
          sharding=NamedSharding(mesh=Mesh('x': 2, axis_types=(Explicit,)), spec=PartitionSpec('x'), memory_kind=device)
        ] a
      in (b,) }
"""
from __future__ import annotations

from ..core.mesh import NamedSharding, PartitionSpec, canonical_spec
from ..core.trace import Primitive
from ..transforms.autodiff.rules import Zero, deflinear, is_zero
from ..transforms.batching import batching_rules
from ..transforms.inline_lowerings import InlineLowering, lowering_rules

__all__ = ["sharding_constraint_p"]


def _abstract_eval(x, *, sharding):
    return [x]


sharding_constraint_p = Primitive("sharding_constraint", impl=lambda x, sharding: [x],
                                  abstract_eval=_abstract_eval)


def _transpose(cts, x, *, sharding):
    ct = cts[0]
    return [Zero(x.aval) if is_zero(ct) else sharding_constraint_p.bind1(ct, sharding=sharding)]


deflinear(sharding_constraint_p, _transpose)


def _batch(axis, vals, dims, *, sharding):
    (x,), (d,) = vals, dims
    spec = list(canonical_spec(sharding.spec, x.ndim - 1, "with_sharding_constraint"))
    spec.insert(d, ())
    spec = PartitionSpec(*(names or None for names in spec))
    out = sharding_constraint_p.bind1(x, sharding=NamedSharding(sharding.mesh, spec))
    return [out], [d]


batching_rules[sharding_constraint_p] = _batch
# Unpartitioned programs: the identity, which inlining removes (jit's expand_lowerings reads
# the table; it lives below jit, so this module knows no backend).
lowering_rules[sharding_constraint_p] = {None: InlineLowering(lambda x, **_: x, False)}
