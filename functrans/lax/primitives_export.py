"""The ``*_p`` primitives ``jax.lax`` exports, as functrans's own primitive objects: the same
objects functrans's jaxprs hold, so a program can be searched for them
(``eqn.prim is lax.sin_p``) and rules registered on them.

They keep functrans's calling convention: ``bind`` returns a list of outputs (JAX's returns
the output itself for a single-output primitive). Of ``jax.lax``'s primitives functrans has
no ``after_all``, ``approx_top_k``, ``bessel_i0e``, ``bessel_i1e``, ``clamp``, ``clz``,
``copy``, ``create_token``, ``dce_sink``, ``device_put``, ``eq_to``, ``igamma``,
``igamma_grad_a``, ``igammac``, ``le_to``, ``linear_solve``, ``lt_to``, ``mulhi``,
``optimization_barrier``, ``ragged_all_to_all``, ``reduce_precision``,
``reduce_window``, ``reduce_xor``, ``regularized_incomplete_beta``, ``rng_bit_generator``,
``rng_uniform``, ``scatter_sub``, ``select_and_scatter``, ``sharding_constraint``, ``split``,
``stack``, ``stage``, ``tile``, ``top_k`` or ``unstack`` primitive (the operations that
exist are composed of others)::

    >>> from functrans import lax
    >>> [e.prim is lax.sin_p for e in ft.make_jaxpr(lax.sin)(1.0).eqns]
    [True]
"""
from functrans.core.trace import all_primitives

from .. import primitives as _primitives  # noqa: F401  (creates every primitive)

_JAX_LAX_PRIMITIVES = (
    "abs acos acosh add all_gather all_to_all and argmax argmin asin asinh atan2 atan atanh "
    "axis_index bitcast_convert_type broadcast_in_dim cbrt ceil complex concatenate cond conj "
    "conv_general_dilated convert_element_type cos cosh cumlogsumexp cummax cummin cumprod "
    "cumsum digamma div dot_general dynamic_slice dynamic_update_slice eq erf_inv erf erfc "
    "exp2 exp expm1 fft floor gather ge gt imag integer_pow iota is_finite le lgamma log1p log "
    "logistic lt max min mul ne neg nextafter not or pad pmax pmin polygamma population_count "
    "pow ppermute psum real reduce_and reduce_max reduce_min reduce_or reduce_prod reduce_sum "
    "reduce reduce_window_max reduce_window_min reduce_window_sum rem reshape rev round rsqrt scan "
    "scatter-add scatter-max scatter-min scatter-mul scatter select_and_gather_add "
    "select_and_scatter_add select_n shift_left shift_right_arithmetic shift_right_logical "
    "sign sin sinh slice sort sqrt square squeeze stop_gradient sub tan tanh transpose while "
    "xor zeta").split()


def _export(names) -> dict:
    """``{jax_name_p: primitive}`` for functrans primitive names (``scatter-add`` is
    exported as ``scatter_add_p``, as JAX does)."""
    prims = all_primitives()
    return {name.replace("-", "_") + "_p": prims[name] for name in names}


_exported = _export(_JAX_LAX_PRIMITIVES)
globals().update(_exported)
__all__ = sorted(_exported)
