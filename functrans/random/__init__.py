"""``functrans.random``: a functional PRNG bit-identical to ``jax.random``'s defaults.

Keys are typed key arrays (:func:`key`: dtype ``key<fry>``, see ``_keys``) or raw
``uint32[2]`` arrays (:func:`PRNGKey`, JAX's "legacy" keys); every function accepts both, and
``split``/``fold_in`` return keys of the kind they were given. Every function takes a key and is
deterministic in it; derive fresh keys with :func:`split` or :func:`fold_in` instead of reusing
one. The generator is JAX's threefry2x32 with ``jax_threefry_partitionable=True`` (JAX's current
default), written as ``lax`` operations, so sampling works unchanged under ``make_jaxpr``,
``grad``, ``vmap`` and ``jit``::

    >>> from functrans import random
    >>> key = random.key(0)
    >>> k1, k2 = random.split(key)
    >>> random.uniform(k1, (2,), "float32").dtype
    dtype('float32')

Bit-identical to JAX (with ``jax_enable_x64``; float16/32/64 and all integer dtypes): keys,
``split``, ``fold_in``, ``bits``, ``uniform``, ``randint``, ``bernoulli``, ``rademacher``,
``permutation``, ``choice`` (except with ``p`` and ``replace=False``, which ranks Gumbel
samples). ``normal`` and ``truncated_normal`` reproduce XLA's ``erf_inv`` and match all but a
few percent of samples bit for bit (the rest by 1-2 ulps in float32). Samplers applying
``log``, ``exp`` or ``tan`` to uniforms agree with JAX to a few ulps (the math libraries
differ in the last bits), so ``categorical`` indices match except at near-ties. Eager
sampling with a concrete key hashes with a compiled kernel (same bits as the ``lax``
composite, which transformations see).

Samplers that need loops (``gamma``,
``beta``, ``dirichlet``, ``poisson``, ``binomial``, ...; see ``_loops``) and the matrix samplers
(``multivariate_normal``, ``orthogonal``), and ``generalized_normal`` and ``ball`` (built on
gamma) sample the right distributions but are not bit-identical to JAX.
"""
from ._continuous import (cauchy, double_sided_maxwell, exponential, gumbel, laplace,  # noqa: F401
                          logistic, lognormal, maxwell, normal, pareto, rayleigh, triangular,
                          truncated_normal, uniform, wald, weibull_min)
from ._discrete import (bernoulli, categorical, choice, geometric, permutation,  # noqa: F401
                        rademacher, randint)
from ._loops import (beta, binomial, chisquare, dirichlet, f, gamma, loggamma,  # noqa: F401
                     multinomial, poisson, t)
from ._generalized import ball, generalized_normal  # noqa: F401
from ._matrix import multivariate_normal, orthogonal  # noqa: F401
from ._keys import KeyArray  # noqa: F401
from ._prng import (PRNGKey, bits, clone, fold_in, key, key_data, key_impl,  # noqa: F401
                    split, threefry2x32, wrap_key_data)

__all__ = ["PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "clone", "split",
           "fold_in", "bits", "threefry2x32", "uniform", "normal", "truncated_normal",
           "exponential", "laplace", "logistic", "cauchy", "gumbel", "lognormal", "pareto",
           "rayleigh", "weibull_min", "maxwell", "double_sided_maxwell", "triangular", "wald",
           "randint", "bernoulli", "rademacher", "categorical", "permutation", "choice",
           "geometric", "gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f",
           "poisson", "binomial", "multinomial", "multivariate_normal", "orthogonal",
           "generalized_normal", "ball"]

from ..core.out_sharding import accept_out_sharding as _accept_out_sharding  # noqa: E402

# JAX's samplers take out_sharding= (optax passes it when the sampler accepts it).
_accept_out_sharding(globals(), [n for n in (
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet",
    "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel", "laplace",
    "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh", "t",
    "triangular", "truncated_normal", "uniform", "wald") if n in globals()])
