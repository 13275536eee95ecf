"""``jax.experimental.array_serialization``: arrays written to and read from TensorStore in
JAX's on-disk format (:mod:`.serialization`, :mod:`.tensorstore_impl`); checkpoint libraries
(orbax) build on it. Needs the ``tensorstore`` package, imported with the submodules."""
