"""Export and serialization of jit-compiled functions, after ``jax.export``.

``export(jit(f))(*args)`` traces ``f`` for the given argument types (arrays, scalars or
``ShapeDtypeStruct``) and returns an :class:`Exported`: its program (a jaxpr, constants
included), argument and result structures and types. ``Exported.serialize()`` writes it as
bytes in a versioned format (documented in :mod:`functrans.export.serialization`), and
``deserialize(data)`` reads it back in any process, without the code that defined ``f``::

    >>> exp = ft.export.export(ft.jit(lambda x: fnp.sin(x) * 2))(fnp.ones(3))
    >>> data = exp.serialize()
    >>> ft.export.deserialize(data).call(fnp.zeros(3))
    Array([0., 0., 0.], dtype=float64)

The deserialized program runs through jit's usual path (optimization passes, one Numba
kernel, the on-disk kernel cache), and ``call`` binds the ``jit`` primitive, so it composes
with ``jit``, ``vmap``, ``grad`` and the rest. Custom derivative rules (``custom_jvp``,
``custom_vjp``) are Python code and are not exported: their traced bodies are, so values are
the same and derivatives of a deserialized function come from the bodies.

Shape polymorphism (JAX's): argument shapes may hold symbolic sizes from
``symbolic_shape``; the export then serves every shape they stand for, and ``call`` checks
the arguments against them (:mod:`functrans.export.shape_poly`)::

    >>> a, b = ft.export.symbolic_shape("a, b")
    >>> exp = ft.export.export(ft.jit(lambda x: fnp.concatenate([x, x], axis=1)))(
    ...     ft.ShapeDtypeStruct((a, b), "int32"))
    >>> exp.out_avals, exp.call(fnp.ones((2, 1), "int32")).shape
    ((ShapedArray(i32[a,2*b]),), (2, 2))
"""
from functrans.core.shape_poly import (InconclusiveDimensionOperation, SymbolicScope,  # noqa: F401
                                       UnexpectedDimVar, is_symbolic_dim, symbolic_shape)
from .exported import (DisabledSafetyCheck, Exported, default_export_platform,  # noqa: F401
                       deserialize, export)
from .shape_poly import symbolic_args_specs  # noqa: F401
from .serialization import (FORMAT_VERSION, READABLE_VERSIONS,  # noqa: F401
                            CorruptExportError, ExportError, IncompatibleVersionError,
                            NotAnExportError, TruncatedExportError, UnknownPrimitiveError,
                            UnserializableError)

# JAX's names for the range of versions deserialize reads (the export format's versions)
minimum_supported_calling_convention_version = min(READABLE_VERSIONS)
maximum_supported_calling_convention_version = max(READABLE_VERSIONS)
