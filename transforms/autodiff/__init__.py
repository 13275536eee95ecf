"""Automatic differentiation: JVP, partial evaluation, transposition, and the public API."""
from .api import grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp  # noqa: F401
from .custom import custom_jvp, custom_vjp  # noqa: F401
from .remat import checkpoint, remat  # noqa: F401
