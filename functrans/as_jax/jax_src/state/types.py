"""``jax._src.state.types``: the abstract value of references, which flax.nnx imports to
recognize them: functrans's :class:`~functrans.ref.AbstractRef`.

    >>> import functrans as ft
    >>> isinstance(ft.typeof(ft.new_ref(1.0)), AbstractRef)
    True
"""
from functrans.ref import AbstractRef, Ref  # noqa: F401
