"""``jax.extend.core.primitives``: JAX's primitive objects, as functrans's own (the objects its
jaxprs hold), so that libraries can find them in programs and register rules on them.

These are ``jax.lax``'s (see :mod:`functrans.lax.primitives_export`), the linear algebra
primitives, the call-like ones (``jit_p``, ``custom_jvp_call_p``, ``custom_vjp_call_p``,
``custom_lin_p``, ``remat_p``: functrans's ``checkpoint``), ``add_jaxvals_p`` (``add_any``)
and the call primitives ``call_p`` and ``closed_call_p`` (never in functrans's own programs).
functrans's primitives keep its calling convention: ``bind`` returns a list of outputs.
JAX's ``after_all``, ``approx_top_k``, ``bessel_i0e``, ``bessel_i1e``, ``clamp``, ``clz``,
``copy``, ``create_token``, ``device_put``, ``empty2``, ``eq_to``, ``get``, ``hessenberg``,
``householder_product``, ``igamma``, ``igamma_grad_a``, ``igammac``, ``le_to``,
``linear_solve``, ``lt_to``, ``name``, ``ragged_all_to_all``, ``random_bits``,
``random_fold_in``, ``random_gamma``, ``random_seed``, ``random_split``,
``reduce_precision``, ``reduce_window``, ``reduce_xor``, ``regularized_incomplete_beta``,
``rng_bit_generator``, ``rng_uniform``, ``schur``, ``select_and_scatter``,
``sharding_constraint``, ``swap``, ``threefry2x32``, ``top_k``, ``tridiagonal`` and
``tridiagonal_solve`` primitives have no functrans counterpart::

    >>> [e.prim is jit_p for e in ft.make_jaxpr(ft.jit(fnp.sin))(1.0).eqns]
    [True]
"""
from functrans.core.trace import all_primitives as _all_primitives
from functrans.lax.primitives_export import __all__ as _lax_names
from functrans.lax import primitives_export as _lax
from functrans.transforms.autodiff.custom import (custom_jvp_call_p, custom_lin_p,  # noqa: F401
                                                  custom_vjp_call_p)
from functrans.transforms.jit.call import jit_p  # noqa: F401

from ._calls import call_p, closed_call_p  # noqa: F401

_prims = _all_primitives()
add_jaxvals_p = _prims["add_any"]
remat_p = _prims["checkpoint"]
cholesky_p, eig_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p = (
    _prims[n] for n in ("cholesky", "eig", "eigh", "lu", "qr", "svd", "triangular_solve"))
globals().update({name: getattr(_lax, name) for name in _lax_names})

__all__ = sorted(list(_lax_names) + [
    "add_jaxvals_p", "call_p", "cholesky_p", "closed_call_p", "custom_jvp_call_p",
    "custom_lin_p", "custom_vjp_call_p", "eig_p", "eigh_p", "jit_p", "lu_p", "qr_p", "remat_p",
    "svd_p", "triangular_solve_p"])


def __getattr__(name):
    raise AttributeError(f"module 'jax.extend.core.primitives' has no attribute {name!r}: "
                         f"functrans has no primitive for JAX's {name}")
