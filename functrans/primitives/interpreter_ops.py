"""The array operations interpreters need (see ``functrans.transforms.ops``), bound here to
the primitives that implement them. The collectives are what ``lax``'s would bind for the
partitioner's arguments (tuples of mesh axes, arrays): the partitioner sits below the user
API and cannot call ``lax``."""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from ..transforms import ops
from .collectives import (all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p,
                          psum_scatter_p)
from .elementwise import add_any_p, add_p, convert_element_type_p, eq_p, select_n_p
from .reductions import reduce_sum_p
from .shape_poly import dimension_as_value
from .structural import (broadcast_in_dim_p, dynamic_slice_p, iota_p, reshape_p,
                         transpose_p)


def zeros(aval):
    zero = np.zeros((), aval.dtype)[()]
    if not aval.shape:
        return zero  # a scalar constant (a literal in jaxprs)
    return broadcast_in_dim_p.bind1(zero, shape=aval.shape, broadcast_dimensions=())


def convert(x, dtype, weak_type=False):
    return convert_element_type_p.bind1(x, new_dtype=np.dtype(dtype), weak_type=weak_type)


def broadcast(x, shape, broadcast_dimensions):
    return broadcast_in_dim_p.bind1(x, shape=tuple(shape),
                                    broadcast_dimensions=tuple(broadcast_dimensions))


def moveaxis(x, src: int, dst: int):
    ndim = len(x.shape)
    perm = [d for d in range(ndim) if d != src]
    perm.insert(dst, src)
    if perm == list(range(ndim)):
        return x
    return transpose_p.bind1(x, permutation=tuple(perm))


def select(pred, on_true, on_false):
    return select_n_p.bind1(pred, on_false, on_true)


def _array(x):
    """A Python number as a NumPy scalar of its type (as ``lax``'s collectives take it)."""
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, get_aval(x).dtype)[()]
    return x


def psum(xs, axes):
    return psum_p.bind_all(*map(_array, xs), axis_name=axes) if xs else []


def psum_scatter(x, axes, dimension):
    x = _array(x)
    return psum_scatter_p.bind1(x, axis_name=axes, scatter_dimension=dimension % get_aval(x).ndim,
                                tiled=True)


def all_gather(x, axis_name, dimension):
    x = _array(x)
    return all_gather_p.bind1(x, axis_name=axis_name, axis=dimension % get_aval(x).ndim,
                              tiled=True)


def dynamic_slice_in_dim(x, start, size, dimension):
    shape = get_aval(x).shape
    starts = [start if d == dimension else np.asarray(0, dtypes.default_int_dtype())[()]
              for d in range(len(shape))]
    sizes = tuple(size if d == dimension else n for d, n in enumerate(shape))
    return dynamic_slice_p.bind1(x, *starts, slice_sizes=sizes)


def basis_block(total, start, aval):
    """Rows of the identity of size ``total`` for the ``aval.size`` inputs starting at
    ``start``, as ``(total,) + aval.shape``, computed by the program (sizes may be
    symbolic)."""
    n = aval.size
    int_dtype = dtypes.default_int_dtype()
    rows = iota_p.bind1(dtype=int_dtype, shape=(total, n), dimension=0)
    cols = iota_p.bind1(dtype=int_dtype, shape=(total, n), dimension=1)
    if not (isinstance(start, int) and start == 0):
        offset = convert(dimension_as_value(start), int_dtype)
        cols = add_p.bind1(cols, broadcast(offset, (total, n), ()))
    eye = convert(eq_p.bind1(rows, cols), aval.dtype)
    return reshape_p.bind1(eye, new_sizes=(total,) + tuple(aval.shape))


ops.install(
    zeros=zeros,
    add_any=lambda x, y: add_any_p.bind1(x, y),
    convert=convert,
    broadcast=broadcast,
    moveaxis=moveaxis,
    select=select,
    reduce_sum=lambda x, axes: reduce_sum_p.bind1(x, axes=tuple(axes)),
    psum=psum,
    pmax=lambda x, axes: pmax_p.bind1(_array(x), axis_name=axes),
    pmin=lambda x, axes: pmin_p.bind1(_array(x), axis_name=axes),
    psum_scatter=psum_scatter,
    all_gather=all_gather,
    axis_index=lambda name: axis_index_p.bind1(axis_name=name),
    dynamic_slice_in_dim=dynamic_slice_in_dim,
    basis_block=basis_block,
)
