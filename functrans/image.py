"""``functrans.image``: image resampling as JAX's ``jax.image`` defines it.

    >>> import functrans.numpy as fnp
    >>> from functrans import image
    >>> image.resize(fnp.ones((2, 3)), (4, 6), "cubic").shape
    (4, 6)

Each resized dimension is a product with a weight matrix (see
:mod:`functrans.numpy.image_resize`), so ``grad``, ``vmap`` and ``jit`` apply.
"""
from __future__ import annotations

from .numpy.image_resize import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
