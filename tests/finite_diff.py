"""Central finite differences: the derivative oracle of the gradient tests.

For float64 and step h the error is about h^2 |f'''| / 6 (truncation) + eps |f| / h
(rounding): with h = 1e-6 and values of order one, about 1e-10 relative; each test states
the tolerance it derives from that.
"""
import numpy as np


def fd_grad(f, x, h=1e-6):
    """The gradient of scalar function ``f`` (float64 NumPy array in, a number out) at ``x``,
    one central difference per coordinate."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
    return g
