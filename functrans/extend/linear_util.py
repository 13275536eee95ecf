"""``jax.extend.linear_util``: functions wrapped with a stack of transformations applied
when called (``WrappedFun``), as JAX's internals and some libraries build them.

``wrap_init(f, params)`` wraps ``f`` (called with ``params`` as keyword arguments); a
*transformation* is a function ``gen(f, *static_args, *args, **kwargs)`` that calls the
function it wraps, ``f``, as it likes; ``transformation2(gen, fun, *static_args)`` adds it to
``fun``; ``call_wrapped(*args)`` runs the whole stack. A transformation with auxiliary output
also gets a store to put it in, read by the thunk returned with the new ``WrappedFun``::

    >>> @transformation_with_aux2
    ... def count_outputs(f, store, *args):
    ...     out = f(*args)
    ...     store.store(len(out))
    ...     return out
    >>> fun, n_out = count_outputs(wrap_init(lambda x: [x, 2 * x]))
    >>> fun.call_wrapped(3), n_out()
    ([3, 6], 2)
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, NamedTuple

__all__ = ["DebugInfo", "Store", "StoreException", "WrappedFun", "cache", "merge_linear_aux",
           "transformation", "transformation2", "transformation_with_aux",
           "transformation_with_aux2", "wrap_init"]


class StoreException(Exception):
    """A store was written twice or read while empty.

        >>> Store().val
        Traceback (most recent call last):
        ...
        functrans.extend.linear_util.StoreException: Store empty
    """


_EMPTY = object()


class Store:
    """One auxiliary value, written once by a transformation and read after the call.

        >>> s = Store()
        >>> s.store(3)
        >>> bool(s), s.val
        (True, 3)
    """

    __slots__ = ("_val",)

    def __init__(self):
        self._val = _EMPTY

    def store(self, val):
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self):
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty")
        return self._val

    def __bool__(self):
        return self._val is not _EMPTY


class EqualStore(Store):
    """A store that may be written again with an equal value.

        >>> s = EqualStore()
        >>> s.store(3); s.store(3)
        >>> s.val
        3
    """

    __slots__ = ()

    def store(self, val):
        if self._val is not _EMPTY:
            try:
                same = bool(self._val == val)
            except Exception:
                same = False
            if not same:
                raise StoreException("Store occupied with not-equal value")
            return
        self._val = val


class DebugInfo(NamedTuple):
    """What traced a function (``traced_for``), which function (``func_src_info``: its name,
    then `` at file:line`` when known) and the names of its flattened arguments and results
    (None when unknown).

        >>> DebugInfo("jit", "f at prog.py:3", ("x",)).func_name
        'f'
    """

    traced_for: str
    func_src_info: str
    arg_names: Any = None
    result_paths: Any = None

    @property
    def func_name(self) -> str:
        return self.func_src_info.split(" ")[0]

    def resolve_result_paths(self) -> "DebugInfo":
        if callable(self.result_paths):
            return self._replace(result_paths=tuple(self.result_paths()))
        return self

    def replace_func_name(self, name: str) -> "DebugInfo":
        rest = self.func_src_info.partition(" ")[2]
        return self._replace(func_src_info=f"{name} {rest}" if rest else name)

    def with_unknown_names(self) -> "DebugInfo":
        return self._replace(arg_names=None, result_paths=None)


class WrappedFun:
    """``f`` with the transformations ``transforms`` (innermost last) and keyword ``params``.
    ``call_wrapped`` calls the transformed function; each transformation with auxiliary
    output has its store in ``stores``.

        >>> fun = wrap_init(lambda x: x + 1)
        >>> fun.call_wrapped(1), fun.transforms
        (2, ())
    """

    __slots__ = ("f", "f_transformed", "transforms", "stores", "params", "in_type",
                 "debug_info")

    def __init__(self, f, f_transformed, transforms, stores, params, in_type, debug_info):
        self.f = f
        self.f_transformed = f_transformed
        self.transforms = transforms
        self.stores = stores
        self.params = params
        self.in_type = in_type
        self.debug_info = debug_info

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen, gen_static_args, out_store) -> "WrappedFun":
        """This function with one more transformation ``gen`` (and its store, or None)."""
        inner = (self.f_transformed,) if out_store is None else (self.f_transformed, out_store)
        return WrappedFun(self.f, functools.partial(gen, *inner, *gen_static_args),
                          ((gen, gen_static_args),) + self.transforms,
                          (out_store,) + self.stores, self.params, None, self.debug_info)

    def populate_stores(self, stores):
        """Copy the values of ``stores`` into this function's stores."""
        for mine, other in zip(self.stores, stores):
            if mine is not None:
                mine.store(other.val)

    def call_wrapped(self, *args, **kwargs):
        """Call the transformed function."""
        return self.f_transformed(*args, **kwargs)

    def replace_debug_info(self, debug_info) -> "WrappedFun":
        return WrappedFun(self.f, self.f_transformed, self.transforms, self.stores,
                          self.params, self.in_type, debug_info)

    def with_unknown_names(self) -> "WrappedFun":
        return self.replace_debug_info(self.debug_info.with_unknown_names())

    def __repr__(self):
        names = ", ".join(getattr(g, "__name__", repr(g)) for g, _ in self.transforms)
        return f"WrappedFun({self.__name__}, transforms=[{names}])"

    def __hash__(self):
        return hash((self.f, self.transforms, self.params, self.in_type))

    def __eq__(self, other):
        return (isinstance(other, WrappedFun) and self.f == other.f
                and self.transforms == other.transforms and self.params == other.params
                and self.in_type == other.in_type)


def wrap_init(f, params=None, *, debug_info=None) -> WrappedFun:
    """``f`` as a :class:`WrappedFun` without transformations, called with ``params``
    (a dict) as keyword arguments.

        >>> wrap_init(lambda x, scale: x * scale, {"scale": 3}).call_wrapped(2)
        6
    """
    if not callable(f):
        raise TypeError(f"wrap_init: expected a function, got {type(f).__name__}")
    params_dict = {} if params is None else dict(params)
    if debug_info is None:
        debug_info = DebugInfo("linear_util.wrap_init", getattr(f, "__name__", "<unknown>"))
    return WrappedFun(f, functools.partial(f, **params_dict), (), (),
                      tuple(sorted(params_dict.items())), None,
                      debug_info._replace(result_paths=None))


def _curry(f):
    return functools.partial(functools.partial, f)


@_curry
def transformation2(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """``fun`` transformed by ``gen(f, *gen_static_args, *args, **kwargs)`` (curried: use as
    a decorator on ``gen``).

        >>> @transformation2
        ... def scaled(f, k, x):
        ...     return k * f(x)
        >>> scaled(wrap_init(lambda x: x + 1), 10).call_wrapped(1)
        20
    """
    return fun.wrap(gen, gen_static_args, None)


@_curry
def transformation_with_aux2(gen, fun: WrappedFun, *gen_static_args, use_eq_store=False,
                             unk_names=False):
    """``(fun transformed by gen(f, store, *gen_static_args, *args), thunk)``: ``gen`` puts an
    auxiliary value in ``store``, which ``thunk()`` returns after a call (see the module's
    example)."""
    store = EqualStore() if use_eq_store else Store()
    fun = fun.wrap(gen, gen_static_args, store)
    return (fun.with_unknown_names() if unk_names else fun), (lambda: store.val)


@_curry
def transformation(gen, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """The older form of :func:`transformation2`: ``gen(*gen_static_args, *args)`` is a
    generator that yields ``(args, kwargs)`` for the wrapped function and receives its
    result, then yields the transformed result.

        >>> @transformation
        ... def negated(x):
        ...     out = yield (x,), {}
        ...     yield -out
        >>> negated(wrap_init(lambda x: x * 2)).call_wrapped(3)
        -6
    """
    def gen2(f, *args, **kwargs):
        g = gen(*args, **kwargs)
        args_, kwargs_ = next(g)
        return g.send(f(*args_, **kwargs_))
    return transformation2(gen2, fun, *gen_static_args)()


@_curry
def transformation_with_aux(gen, fun: WrappedFun, *gen_static_args):
    """The older form of :func:`transformation_with_aux2`: the generator's final yield is
    ``(result, aux)``.

        >>> @transformation_with_aux
        ... def with_input(x):
        ...     out = yield (x,), {}
        ...     yield out, x
        >>> fun, aux = with_input(wrap_init(lambda x: x * 2))
        >>> fun.call_wrapped(3), aux()
        (6, 3)
    """
    def gen2(f, store, *args, **kwargs):
        g = gen(*args, **kwargs)
        args_, kwargs_ = next(g)
        ans, aux = g.send(f(*args_, **kwargs_))
        store.store(aux)
        return ans
    return transformation_with_aux2(gen2, fun, *gen_static_args)()


def merge_linear_aux(aux1, aux2):
    """The auxiliary output of whichever of two exclusive branches ran: ``(True, aux)`` for
    the first, ``(False, aux)`` for the second.

        >>> full, empty = Store(), Store()
        >>> full.store("a")
        >>> merge_linear_aux(lambda: empty.val, lambda: full.val)
        (False, 'a')
    """
    try:
        out1 = aux1()
    except StoreException:
        try:
            out2 = aux2()
        except StoreException:
            raise StoreException("neither store occupied") from None
        return False, out2
    try:
        aux2()
    except StoreException:
        return True, out1
    raise StoreException("both stores occupied")


def cache(call, *, explain=None):
    """Memoize ``call(fun: WrappedFun, *args)`` per wrapped function, its transformations
    and params, and ``args`` (hashable); a cached answer also restores the auxiliary outputs
    (stores) the first call left in ``fun``'s transformations.

        >>> calls = []
        >>> @cache
        ... def run(fun, x):
        ...     calls.append(x)
        ...     return fun.call_wrapped(x)
        >>> def g(x):
        ...     return x * 2
        >>> run(wrap_init(g), 3), run(wrap_init(g), 3), calls
        (6, 6, [3])
    """
    table: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    @functools.wraps(call)
    def memoized(fun: WrappedFun, *args):
        per_f = table.setdefault(fun.f, {})
        key = (fun.transforms, fun.params, fun.in_type, args)
        hit = per_f.get(key)
        if hit is not None:
            ans, stores = hit
            fun.populate_stores(stores)
            return ans
        ans = call(fun, *args)
        per_f[key] = (ans, fun.stores)
        return ans

    memoized.cache_clear = table.clear
    return memoized
