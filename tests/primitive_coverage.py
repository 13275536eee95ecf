"""Coverage of the primitive set by table-driven tests: which primitives a list of programs
uses, and the check that every primitive is reached by some test of a transformation."""
import functrans as ft
from functrans.core.ir import walk_jaxprs
from functrans.core.trace import all_primitives

# Higher-order primitives are tested under every transformation in their own modules.
TESTED_ELSEWHERE = {
    "check": "test_checkify",
    "cond": "test_control_flow", "while": "test_control_flow", "scan": "test_control_flow",
    "custom_jvp_call": "test_custom_rules", "custom_vjp_call": "test_custom_rules",
    "custom_lin": "test_custom_rules", "checkpoint": "test_custom_rules", "jit": "test_jit_api",
    "shard_map": "test_spmd", "debug_callback": "test_spmd", "pure_callback": "test_callbacks",
    "io_callback": "test_io_callback",
    "custom_vmap_call": "test_custom_batching",
    "custom_linear_solve": "test_custom_linear_solve",
    # a user's reducer folded by a scan: values, grad, vmap, jit and the laws there
    "reduce": "test_lax_reduce",
    # the identity unless partitioned: jit, grad and vmap of it in test_jit_partitioning and
    # test_with_sharding_constraint
    "sharding_constraint": "test_jit_partitioning",
    # a user's Numba kernel: eager, jit, vmap (each vmap_method), derivatives through its
    # rules, its type rule against its impl, pmap and shard_map in its own module
    "numba_call": "test_numba_call",
    # a user's scalar kernel: eager, jit (both code generators, fused), vmap, derivatives
    # through its per-operand partials, its type rule against its impl, in its own module
    "numba_vectorize": "test_numba_vectorize",
    # only in programs traced with symbolic shapes: jit, vmap, grad of exported programs
    # that use x.shape[0] as a value in test_shape_poly (an export specialized to concrete
    # sizes holds a literal instead)
    "dimension_as_value": "test_shape_poly",
}
# vmap replaces collectives by ordinary primitives while tracing; on devices they exchange
# values between shards: test_vmap and test_spmd (pmap == vmap for each) test them.
COLLECTIVES = {"psum", "pmax", "pmin", "all_gather", "axis_index", "ppermute", "psum_scatter",
               "all_to_all"}


def primitives_in(programs) -> set:
    """Names of the primitives in the jaxprs of ``(function, args)`` pairs, sub-jaxprs included."""
    seen = set()

    def walk(jaxpr):
        for e in jaxpr.eqns:
            seen.add(e.prim.name)
            for sub in walk_jaxprs(e.params):
                walk(sub)
    for f, args in programs:
        walk(ft.make_jaxpr(f)(*args))
    return seen


def assert_every_primitive_covered(seen, what: str) -> None:
    """Every primitive is in ``seen``, tested elsewhere, or a collective."""
    known = set(all_primitives())
    assert set(TESTED_ELSEWHERE) | COLLECTIVES <= known  # keep the tables true after renames
    missing = known - set(seen) - set(TESTED_ELSEWHERE) - COLLECTIVES
    assert not missing, f"primitives without {what}: {sorted(missing)}"
