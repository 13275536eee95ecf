"""The native backend: jit programs as LLVM code generated directly, compiled per kernel.

See ARCHITECTURE.md ("Native code"): planned steps become small canonical kernels shared
between programs, a driver per program calls them, and Numba's own scalar rules are
inlined where the backend does not write a rule itself.
"""
