"""Threefry-2x32 keys and raw bits, bit-identical to JAX's default PRNG.

JAX's defaults reproduced here: the ``threefry2x32`` implementation with
``jax_threefry_partitionable=True``. Under that flag the counter of element ``i`` (row-major
index into the requested shape) is the 64-bit value ``i`` split into ``(hi, lo)`` words, and

* ``split(key, shape)[i] = threefry(key, (hi_i, lo_i))`` (both output words),
* ``bits(key, shape)[i] = out0 ^ out1`` for 32 bits (truncated for 8/16 bits) and
  ``out0 << 32 | out1`` for 64 bits,
* ``fold_in(key, d) = threefry(key, (0, d))``.

Everything is a composite of ``lax`` operations on ``uint32`` arrays, so keys are ordinary
arrays: they can be traced, batched, differentiated through (as constants) and stored in pytrees.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from .. import lax
from ..core import dtypes
from ..core.array import Array
from ..core.config import config
from ..core.trace import EVAL_TRACE, Tracer, current_trace, get_aval
from ._keys import KeyArray

U32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: U32, 64: np.dtype(np.uint64)}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = np.uint32(0x1BD11BDA)


# ---- argument checking ----------------------------------------------------------------------------
def _is_array(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray))


def check_key(name: str, key, *, allow_batched: bool = False):
    """Validate a key (raw ``uint32[2]`` or a typed key; ``[..., 2]`` / any shape when
    batched) and return its raw data."""
    if isinstance(key, KeyArray):
        if key.shape and not allow_batched:
            raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                             f"{key.shape}; use functrans.vmap to map over keys")
        key = key._data
    if not _is_array(key):
        raise TypeError(f"{name}: key must be a uint32[2] key array (from PRNGKey, key, split or "
                        f"fold_in), got {type(key).__name__}: {key!r:.60}")
    aval = get_aval(key)
    if aval.dtype != U32:
        raise TypeError(f"{name}: key must have dtype uint32, got a key of dtype {aval.dtype} "
                        f"and shape {aval.shape}")
    if aval.ndim < 1 or aval.shape[-1] != 2:
        raise TypeError(f"{name}: key must have shape (2,) (a threefry2x32 key), got shape "
                        f"{aval.shape}")
    if aval.ndim != 1 and not allow_batched:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{aval.shape}; use functrans.vmap to map over keys")
    return key


def check_impl(name: str, impl) -> None:
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"{name}: only the 'threefry2x32' PRNG implementation is supported, "
                         f"got impl={impl!r}")


def canonical_shape(name: str, shape, what: str = "shape") -> tuple:
    """``shape`` as a tuple of non-negative ints (an int means a 1-D shape). As in JAX, any
    iterable of integer-like sizes (objects with ``__index__``, such as TensorFlow
    Probability's ``TensorShape`` dimensions) is a shape."""
    if isinstance(shape, str):
        raise TypeError(f"{name}: {what} must be a tuple of ints, got {shape!r}")
    if isinstance(shape, Sequence) or (hasattr(shape, "__iter__")
                                       and getattr(shape, "ndim", None) != 0):
        dims = tuple(shape)
    elif np.ndim(shape) == 0:
        dims = (shape,)
    else:
        raise TypeError(f"{name}: {what} must be a tuple of ints, got {shape!r}")
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"{name}: {what} must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: {what} must contain non-negative sizes, got {dims}")
    return dims


def uint_dtype(name: str, dtype) -> np.dtype:
    d = dtypes.canonicalize_dtype(dtypes.default_uint_dtype() if dtype is None else dtype,
                                  what=f"{name}: dtype")
    if dtypes.kind(d) != "u":
        raise ValueError(f"dtype argument to `{name}` must be an unsigned int dtype, got {d}")
    return d


# ---- the hash -------------------------------------------------------------------------------------
def _u32(v) -> np.uint32:
    return np.uint32(v)


def _rotate_left(x, r: int):
    return lax.bitwise_or(lax.shift_left(x, _u32(r)), lax.shift_right_logical(x, _u32(32 - r)))


def threefry2x32(k0, k1, x0, x1):
    """The Threefry-2x32 block cipher (20 rounds) applied elementwise.

    ``k0, k1`` are the two ``uint32`` key words (rank 0); ``x0, x1`` the counter words, each of
    the output's shape or rank 0. Returns the two output words.

        >>> a, b = threefry2x32(np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
        >>> int(a), int(b)
        (1797259609, 2579123966)
    """
    ks = (k0, k1, lax.bitwise_xor(lax.bitwise_xor(k0, k1), _KS_PARITY))
    x0 = lax.add(x0, ks[0])
    x1 = lax.add(x1, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(x0, _rotate_left(x1, r))
        # Key injection; the round counter is added to the (scalar) key word, not the array.
        x0 = lax.add(x0, ks[(i + 1) % 3])
        x1 = lax.add(x1, lax.add(ks[(i + 2) % 3], _u32(i + 1)))
    return x0, x1


def _key_words(key):
    return (lax.index_in_dim(key, 0, keepdims=False), lax.index_in_dim(key, 1, keepdims=False))


def _iota_2x32(shape: tuple):
    """The row-major index of each element of ``shape`` as (hi, lo) uint32 words.

    ``hi`` is returned as a rank-0 zero whenever the size fits in 32 bits (always, in practice),
    which lets the first rounds of the hash run on scalars."""
    size = math.prod(shape)
    if size <= 2**32:
        lo = lax.reshape(lax.iota(U32, size), shape) if shape else _u32(0)
        return _u32(0), lo
    if dtypes.canonicalize_dtype(np.uint64) != np.dtype(np.uint64):
        raise ValueError(f"random arrays of {size} >= 2**32 elements need 64-bit dtypes "
                         "(enable_x64)")
    idx = lax.reshape(lax.iota(np.uint64, size), shape)
    hi = lax.convert_element_type(lax.shift_right_logical(idx, np.uint64(32)), U32)
    return hi, lax.convert_element_type(idx, U32)


def _hash_shape(key, shape: tuple):
    k0, k1 = _key_words(key)
    hi, lo = _iota_2x32(shape)
    return threefry2x32(k0, k1, hi, lo)


def _stack_last(a, b):
    shape = get_aval(a).shape
    dims = tuple(range(len(shape)))
    a = lax.broadcast_in_dim(a, shape + (1,), dims)
    b = lax.broadcast_in_dim(b, shape + (1,), dims)
    return lax.concatenate([a, b], len(shape))


def _eager_value(x):
    """``x`` as an ndarray when it is concrete and no transformation is running, else None:
    then the compiled kernel computes the hash (same bits, one pass instead of ~110)."""
    if current_trace() is not EVAL_TRACE:
        return None
    if type(x) is Array:
        return x._value
    return x if isinstance(x, (np.ndarray, np.generic)) else None


def random_bits(key, bit_width: int, shape: tuple):
    """Uniform unsigned integers of ``bit_width`` bits (8, 16, 32 or 64) and ``shape``."""
    k = _eager_value(key)
    if k is not None:
        from ._kernels import hash_counters
        size = math.prod(shape)
        if bit_width == 64:
            b0, b1 = hash_counters(k, size)
            out = (b0.astype(np.uint64) << np.uint64(32)) | b1
        else:
            out = hash_counters(k, size, xor=True)
            out = out if bit_width == 32 else out.astype(UINT_DTYPES[bit_width])
        return Array._wrap(out.reshape(shape))
    b0, b1 = _hash_shape(key, shape)
    if bit_width == 64:
        u64 = UINT_DTYPES[64]
        hi = lax.convert_element_type(b0, u64)
        return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lax.convert_element_type(b1, u64))
    bits = lax.bitwise_xor(b0, b1)
    return bits if bit_width == 32 else lax.convert_element_type(bits, UINT_DTYPES[bit_width])


def split_key(key, shape: tuple):
    k = _eager_value(key)
    if k is not None:
        from ._kernels import hash_counters
        b0, b1 = hash_counters(k, math.prod(shape))
        return Array._wrap(np.stack([b0, b1], axis=-1).reshape(shape + (2,)))
    return _stack_last(*_hash_shape(key, shape))


# ---- public key API -------------------------------------------------------------------------------
def _seed_words(name: str, seed):
    if isinstance(seed, int):  # Python ints (and bools) are int64, as in jax.random.PRNGKey
        seed = int(seed)
        if not -2**63 <= seed < 2**63:
            raise OverflowError(f"{name}: seed {seed} does not fit in a 64-bit signed integer")
        seed &= 2**64 - 1
        return np.array([seed >> 32, seed & 0xFFFFFFFF], U32)
    if isinstance(seed, np.generic):
        seed = np.asarray(seed)
    try:
        aval = get_aval(seed)
    except TypeError:
        raise TypeError(f"{name}: seed must be an integer scalar, got {seed!r:.60}") from None
    if aval.shape:
        raise TypeError(f"{name} accepts a scalar seed, but was given an array of shape "
                        f"{aval.shape}; use functrans.vmap for batching")
    if dtypes.kind(aval.dtype) not in "iu":
        raise TypeError(f"{name}: seed must be an integer, got dtype {aval.dtype}")
    # 32-bit and narrower seeds (sign-extended) fill the low word only, as in JAX.
    lo = lax.convert_element_type(seed, U32)
    if aval.dtype.itemsize == 8:
        shift = np.asarray(32, aval.dtype)[()]
        hi = lax.convert_element_type(lax.shift_right_logical(seed, shift), U32)
    else:
        hi = _u32(0)
    return lax.concatenate([lax.broadcast(hi, (1,)), lax.broadcast(lo, (1,))], 0)


def PRNGKey(seed, *, impl=None):
    """A raw threefry2x32 key: ``uint32[2]`` holding the 64-bit ``seed`` (high word first).

    Python ints must fit in int64; narrower integer dtypes are sign-extended into the low word
    only, exactly as ``jax.random.PRNGKey``.

        >>> random.PRNGKey(42)
        Array([ 0, 42], dtype=uint32)
        >>> random.PRNGKey(-1)
        Array([4294967295, 4294967295], dtype=uint32)
    """
    check_impl("PRNGKey", impl)
    if config.enable_custom_prng:  # JAX's flag: PRNGKey makes typed keys
        return key(seed)
    from ..numpy import asarray
    return asarray(_seed_words("PRNGKey", seed))


def key(seed, *, impl=None):
    """A typed key: a scalar of dtype ``key<fry>`` holding the same bits as
    :func:`PRNGKey` (which :func:`key_data` returns).

        >>> random.key(3)
        Array((), dtype=key<fry>) overlaying:
        [0 3]
    """
    check_impl("key", impl)
    from ..numpy import asarray
    return KeyArray(asarray(_seed_words("key", seed)))


def key_data(keys):
    """The ``uint32[..., 2]`` data of (an array of) keys; raw keys are returned as they are.

        >>> random.key_data(random.key(3))
        Array([0, 3], dtype=uint32)
    """
    return check_key("key_data", keys, allow_batched=True)


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys from their ``uint32[..., 2]`` data (the inverse of :func:`key_data`).

        >>> random.wrap_key_data(fnp.array([0, 3], dtype="uint32")).shape
        ()
    """
    check_impl("wrap_key_data", impl)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError("wrap_key_data: the argument is already a typed key array "
                        f"({key_bits_array.dtype}); pass its random.key_data")
    return KeyArray(check_key("wrap_key_data", key_bits_array, allow_batched=True))


def _like(key, raw):
    """``raw`` keys typed as ``key`` was (typed keys in, typed keys out)."""
    return KeyArray(raw) if isinstance(key, KeyArray) else raw


def key_impl(keys) -> str:
    """The PRNG implementation name of ``keys`` (always ``'threefry2x32'``).

        >>> random.key_impl(random.key(0))
        'threefry2x32'
    """
    check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def clone(key):
    """Identity (JAX uses it to mark deliberate key reuse).

        >>> k = random.key(0)
        >>> bool(random.clone(k) == k)
        True
    """
    return key


def split(key, num=2):
    """Split ``key`` into ``num`` new keys (``num`` may be a shape): typed keys of shape
    ``num`` for a typed key, ``uint32[*num, 2]`` for a raw one.

        >>> random.split(random.PRNGKey(0))
        Array([[1797259609, 2579123966],
               [ 928981903, 3453687069]], dtype=uint32)
        >>> random.split(random.key(0), (2, 3)).shape
        (2, 3)
    """
    return _like(key, split_key(check_key("split", key), canonical_shape("split", num, "num")))


def fold_in(key, data):
    """A new key derived from ``key`` and the 32-bit integer ``data`` (wrapped to uint32).

        >>> random.fold_in(random.PRNGKey(0), 1)
        Array([ 928981903, 3453687069], dtype=uint32)
    """
    typed, key = key, check_key("fold_in", key)
    if type(data) is int:
        if not 0 <= data < 2**32:
            raise OverflowError(f"fold_in: data={data} is out of bounds for uint32")
        data = _u32(data)
    elif (shape := get_aval(data).shape if isinstance(data, Tracer) else np.shape(data)):
        raise TypeError(f"fold_in accepts a scalar data, but was given an array of shape "
                        f"{shape}; use functrans.vmap for batching")
    else:
        data = lax.convert_element_type(data, U32)
    k, d = _eager_value(key), _eager_value(data)
    if k is not None and d is not None:
        from ._kernels import hash_counters
        b0, b1 = hash_counters(k, 1, offset=int(d))
        return _like(typed, Array._wrap(np.concatenate([b0, b1])))
    k0, k1 = _key_words(key)
    return _like(typed, _stack_last(*threefry2x32(k0, k1, _u32(0), data)))


def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers of ``dtype`` (default: ``uint64``, or
    ``uint32`` with ``enable_x64`` off).

        >>> random.bits(random.key(0), (2,), "uint32")
        Array([4070199207, 4202968722], dtype=uint32)
    """
    key = check_key("bits", key)
    dtype = uint_dtype("bits", dtype)
    shape = canonical_shape("bits", shape)
    return random_bits(key, 8 * dtype.itemsize, shape)
