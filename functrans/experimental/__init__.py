"""Experimental APIs, under the names JAX gives them (``jax.experimental``)."""
