"""The array operations interpreters need (see ``functrans.transforms.ops``), bound here to
the primitives that implement them."""
from __future__ import annotations

import numpy as np

from ..transforms import ops
from .elementwise import add_any_p, convert_element_type_p, select_n_p
from .reductions import reduce_sum_p
from .structural import broadcast_in_dim_p, transpose_p


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


ops.install(
    zeros=zeros,
    add_any=lambda x, y: add_any_p.bind1(x, y),
    convert=convert,
    broadcast=broadcast,
    moveaxis=moveaxis,
    select=select,
    reduce_sum=lambda x, axes: reduce_sum_p.bind1(x, axes=tuple(axes)),
)
