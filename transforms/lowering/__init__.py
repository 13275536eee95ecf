"""Lowering of jaxprs to compiled code (Numba on CPU)."""
