"""``jax._src.traceback_util``: libraries (flax, equinox, jaxtyping) register their own source
files here so that the lines functrans records for errors and jaxprs are their users' lines,
not the library's. The registry is core's (:mod:`functrans.core.frames`); this module is its
JAX-named face (``_exclude_paths`` is the same list: flax edits it directly).

    >>> from functrans.as_jax.jax_src import traceback_util
    >>> traceback_util.register_exclusion("/srv/mylib/")
    >>> "/srv/mylib/" in traceback_util._exclude_paths
    True
"""
from __future__ import annotations

import functools

from functrans.core.frames import (  # noqa: F401 - JAX's names, re-exported
    _exclude_paths, include_frame, path_starts_with, register_exclusion)


def api_boundary(fun=None, **_options):
    """Mark ``fun`` as a library entry point. functrans filters no tracebacks, so ``fun`` is
    returned as it is (also as ``@api_boundary(repro_api_name=...)``).

        >>> api_boundary(len) is len
        True
    """
    if fun is None:
        return functools.partial(api_boundary, **_options)
    return fun
