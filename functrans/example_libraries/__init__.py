"""Small libraries built on functrans, with the APIs of ``jax.example_libraries``:
:mod:`~functrans.example_libraries.stax` (neural-network layers as ``(init_fun, apply_fun)``
pairs) and :mod:`~functrans.example_libraries.optimizers` (first-order optimizers as
``(init_fun, update_fun, get_params)`` triples).

    >>> from functrans.example_libraries import optimizers, stax
    >>> init, apply = stax.Dense(2)
    >>> init(random.key(0), (-1, 3))[0]
    (-1, 2)
"""
from . import optimizers, stax  # noqa: F401
