"""Automatic differentiation: JVP, partial evaluation, transposition, and the public API."""
from .api import (grad, hessian, jacfwd, jacobian, jacrev, jvp, linearize,  # noqa: F401
                  value_and_grad, vjp)
from .linear_transpose import linear_transpose  # noqa: F401
from .custom import custom_jvp, custom_vjp  # noqa: F401
from .remat import checkpoint, remat  # noqa: F401
