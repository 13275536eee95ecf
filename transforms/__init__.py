"""The interpreters over the IR: autodiff, batching, jit (call primitive, caching, lowering).

Each transformation owns its rule registry; primitive families register their rules there.
This package is installed as ``functrans.transforms``.
"""
import os as _os

from functrans.core.ir import register_internal_dir as _register_internal_dir

_register_internal_dir(_os.path.dirname(_os.path.abspath(__file__)))
