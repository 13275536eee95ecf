"""``jax.extend.ifrt_programs``: XLA's IFRT program builders (plugin and colocated Python
programs for IFRT's clients). Importable, with JAX's one name ``ifrt_programs`` (libraries
read it at import), whose functions are XLA-only: reading one raises ``AttributeError``::

    >>> from functrans.extend.ifrt_programs import ifrt_programs
    >>> ifrt_programs.make_plugin_program
    Traceback (most recent call last):
    ...
    AttributeError: jax.extend.ifrt_programs.ifrt_programs.make_plugin_program is not provided: XLA-only (IFRT programs run on XLA's IFRT clients; functrans runs without XLA)
"""
from __future__ import annotations

__all__ = ["ifrt_programs"]


class _IfrtPrograms:
    """XLA's ``ifrt_programs`` extension module: every attribute XLA-only."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"jax.extend.ifrt_programs.ifrt_programs.{name} is not provided: "
                             "XLA-only (IFRT programs run on XLA's IFRT clients; functrans "
                             "runs without XLA)")

    def __repr__(self):
        return "<XLA's ifrt_programs: not provided (XLA-only)>"


ifrt_programs = _IfrtPrograms()
