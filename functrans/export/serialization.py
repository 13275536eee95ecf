"""The file format of exported functions (format version 1), and its reader and writer.

An export is one byte string::

    offset  size  content
    0       8     magic  b"FTEXPORT"
    8       4     format version, unsigned little-endian (this module writes and reads 1)
    12      8     N: length of the JSON description, unsigned little-endian
    20      8     M: length of the array data, unsigned little-endian
    28      4     CRC-32 (zlib) of the N + M bytes that follow, unsigned little-endian
    32      N     JSON description, UTF-8
    32 + N  M     array data: the raw bytes of every array, little-endian, C order

Nothing may follow. The JSON description is an object::

    {"producer": "functrans 0.1.0", "fun_name": "f", "platforms": ["cpu"],
     "in_tree": TREE, "out_tree": TREE,
     "jaxprs": [JAXPR, ...],        # jaxprs[0] is the program; params refer to the others
     "arrays": [{"dtype": "float64", "shape": [3], "offset": 0, "nbytes": 24}, ...]}

    JAXPR = {"vars": [AVAL, ...],   # every variable of this jaxpr; others refer by index
             "constvars": [i, ...], "consts": [array index, ...],
             "invars": [i, ...], "outvars": [ATOM, ...], "eqns": [EQN, ...]}
    EQN   = {"prim": "mul", "in": [ATOM, ...], "out": [i, ...], "params": {name: VALUE},
             "src": [filename, line, function] or null}
    AVAL  = [dtype name, [dims], weak_type]   # a dim: an int, or a symbolic size's text
    ATOM  = i (a variable) | ["lit", AVAL, hex of the value's little-endian bytes]
    TREE  = ["*"] (a leaf) | ["None"] | ["tuple", [TREE, ...]] | ["list", [TREE, ...]]
          | ["dict", [VALUE key, ...], [TREE, ...]] | ["OrderedDict", [VALUE key, ...], [TREE, ...]]

Param values carry explicit type tags, from a closed set::

    ["none"] | ["bool", b] | ["int", n] | ["float", float.hex(x)] | ["str", s]
    | ["tuple", [VALUE, ...]] | ["dtype", name] | ["jaxpr", index into "jaxprs"]
    | ["array", index into "arrays"] | ["scalar", dtype name, hex bytes] | ["aval", AVAL]
    | ["dim", text of a symbolic size]

An export with symbolic shapes also has ``"dim_constraints": [str, ...]`` (its scope's
constraints); its symbolic sizes are parsed into one scope made with them.

Reading never unpickles, evaluates or imports anything named by the file: primitive names
are looked up among the primitives this process has registered (an unknown name is an
error), dtypes must be functrans' supported dtypes, and every program is type-checked
(``check_jaxpr``) before it is returned. Each kind of bad input raises its own
:class:`ExportError` subclass (a ``ValueError``)::

    >>> deserialize_payload(b"PK\\x03\\x04 not an export")
    Traceback (most recent call last):
    ...
    functrans.export.serialization.NotAnExportError: not a functrans export: ...
"""
from __future__ import annotations

import json
import math
import re
import struct
import zlib
from collections import OrderedDict

import numpy as np

from functrans._version import __version__
from functrans.core.array import Array
from functrans.core.avals import ShapedArray
from functrans.core.check import JaxprTypeError, check_jaxpr
from functrans.core import dtypes as _core_dtypes
from functrans.core.ir import Eqn, Jaxpr, Literal, SourceInfo, Var
from functrans.core.shape_poly import DimExpr, SymbolicScope
from functrans.core.shape_poly_parse import parse_dims
from functrans.core.trace import _PRIMITIVES
from functrans.core.tree import PyTreeDef, tree_structure  # noqa: F401 (doctests)

MAGIC = b"FTEXPORT"
FORMAT_VERSION = 1
READABLE_VERSIONS = (1,)
_HEADER = struct.Struct("<8sIQQI")



def _known_dtype(name):
    """The supported dtype called ``name``, else None. (By name, not by lookup in a table
    built at import: the narrow floats' names import ml_dtypes only when met.)"""
    try:
        d = _core_dtypes.np_dtype(name) if isinstance(name, str) else None
    except TypeError:
        return None
    return d if d is not None and d.name == name and _core_dtypes.is_supported(d) else None


class ExportError(ValueError):
    """Base class: bytes that cannot be read as an export, or a function that cannot be
    written as one."""


class NotAnExportError(ExportError):
    """The bytes do not start with the export magic (wrong file, or not an export)."""


class TruncatedExportError(ExportError):
    """The bytes end before the lengths in the header say they should."""


class IncompatibleVersionError(ExportError):
    """The export was written in a format version this functrans cannot read."""


class CorruptExportError(ExportError):
    """The header is fine but the content is not: checksum, JSON or program structure."""


class UnknownPrimitiveError(CorruptExportError):
    """The program uses a primitive this process does not know."""


class UnserializableError(ExportError):
    """The function uses something the format cannot represent."""


def primitive_registry() -> dict:
    """The primitives a program may name, by name. The first primitive registered under a name
    wins, so a later look-alike (a test or tutorial defining its own ``sin``) cannot stand in
    for the library's.

    >>> primitive_registry()["sin"]
    sin
    """
    reg: dict = {}
    for p in _PRIMITIVES:
        reg.setdefault(p.name, p)
    return reg


# ---- writing ----------------------------------------------------------------------------------
_CALL_LIKE = ("custom_jvp_call", "custom_vjp_call", "custom_vmap_call")


class _Writer:
    def __init__(self):
        self.registry = primitive_registry()
        self.jaxprs: list = []
        self.jaxpr_index: dict = {}
        self.keep: list = []  # keeps encoded objects alive so ids stay unique
        self.arrays: list = []
        self.chunks: list = []
        self.offset = 0

    def array(self, value) -> int:
        a = value._value if type(value) is Array else np.asarray(value)
        if _known_dtype(a.dtype.name) is None:
            raise UnserializableError(f"array constant of dtype {a.dtype} is not serializable")
        data = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes()
        self.arrays.append({"dtype": a.dtype.name, "shape": list(a.shape),
                            "offset": self.offset, "nbytes": len(data)})
        self.chunks.append(data)
        self.offset += len(data)
        return len(self.arrays) - 1

    def jaxpr(self, jaxpr: Jaxpr) -> int:
        idx = self.jaxpr_index.get(id(jaxpr))
        if idx is not None:
            return idx
        idx = len(self.jaxprs)
        self.jaxpr_index[id(jaxpr)] = idx
        self.keep.append(jaxpr)
        self.jaxprs.append(None)  # reserve the slot: sub-jaxprs get later indices
        self.jaxprs[idx] = self._jaxpr_body(jaxpr)
        return idx

    def _jaxpr_body(self, jaxpr: Jaxpr) -> dict:
        ids: dict = {}
        avals: list = []

        def var(v) -> int:
            i = ids.get(v)
            if i is None:
                i = ids[v] = len(avals)
                avals.append(encode_aval(v.aval))
            return i

        def atom(x):
            if isinstance(x, Literal):
                return ["lit", encode_aval(x.aval), _le_bytes(x.val).hex()]
            return var(x)

        out = {"constvars": [var(v) for v in jaxpr.constvars],
               "consts": [self.array(c) for c in jaxpr.consts],
               "invars": [var(v) for v in jaxpr.invars]}
        eqns = []
        for eqn in jaxpr.eqns:
            prim, params = eqn.prim, eqn.params
            if prim.name in _CALL_LIKE:
                # The custom rule is Python code: keep the traced body as a plain call, so the
                # program computes the same values (derivatives then come from the body).
                rule = params.get("jvp") or params.get("fwd")
                prim = self.registry["jit"]
                params = {"jaxpr": params.get("call_jaxpr") or params["jaxpr"],
                          "name": getattr(rule, "what", eqn.prim.name)}
            elif self.registry.get(prim.name) is not prim:
                raise UnserializableError(
                    f"primitive {prim.name!r} is not the registered primitive of that name, so a "
                    "reader could not find it (was a second primitive created with this name?)")
            if prim.name == "custom_lin":
                raise UnserializableError("custom_lin (a custom_vjp rule inside a linearized "
                                          "program) cannot be exported: it holds Python code")
            eqns.append({
                "prim": prim.name, "in": [atom(x) for x in eqn.inputs],
                "out": [var(v) for v in eqn.outputs],
                "params": {k: self.value(v, f"{prim.name}[{k}]") for k, v in params.items()},
                "src": list(eqn.source[:3]) if eqn.source is not None else None})
        out["eqns"] = eqns
        out["outvars"] = [atom(x) for x in jaxpr.outvars]
        out["vars"] = avals
        return out

    def value(self, v, where: str):
        t = type(v)
        if v is None:
            return ["none"]
        if t is bool:
            return ["bool", v]
        if t is int:
            return ["int", v]
        if t is float:
            return ["float", v.hex()]
        if t is str:
            return ["str", v]
        if t is tuple:
            return ["tuple", [self.value(x, where) for x in v]]
        if t is Jaxpr:
            return ["jaxpr", self.jaxpr(v)]
        if t is DimExpr:
            return ["dim", str(v)]
        if isinstance(v, np.dtype):
            if _known_dtype(v.name) is None:
                raise UnserializableError(f"{where}: dtype {v} is not serializable")
            return ["dtype", v.name]
        if t is ShapedArray:
            return ["aval", encode_aval(v)]
        if isinstance(v, np.generic) and _known_dtype(v.dtype.name) is not None:
            return ["scalar", v.dtype.name, _le_bytes(v).hex()]
        if isinstance(v, np.ndarray) or t is Array:
            return ["array", self.array(v)]
        raise UnserializableError(
            f"{where}: a param of type {t.__name__} ({v!r:.60}) has no serialized form; "
            "supported: None, bool, int, float, str, tuple, dtype, arrays, jaxprs")


def _le_bytes(x) -> bytes:
    a = np.asarray(x)
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def encode_aval(a: ShapedArray) -> list:
    # A symbolic size is written as its text (JAX's syntax), read back in the export's scope.
    return [a.dtype.name, [str(d) if type(d) is DimExpr else d for d in a.shape],
            bool(a.weak_type)]


def encode_tree(td: PyTreeDef, where="tree") -> list:
    """A PyTreeDef as JSON (containers only: custom nodes would need their Python class).

    >>> encode_tree(tree_structure((1, {"a": 2, "b": None})))
    ['tuple', [['*'], ['dict', [['str', 'a'], ['str', 'b']], [['*'], ['None']]]]]
    """
    t = td.node_type
    kids = td.children()
    if t is None:
        return ["*"]
    if t is type(None):
        return ["None"]
    if t is tuple or t is list:
        return [t.__name__, [encode_tree(c, where) for c in kids]]
    if t is dict or t is OrderedDict:
        keys = [_Writer().value(k, f"{where} key") for k in td.aux]
        return [t.__name__, keys, [encode_tree(c, where) for c in kids]]
    raise UnserializableError(
        f"{where}: pytree node type {t.__name__} cannot be serialized (only tuples, lists, "
        "dicts, OrderedDicts and None are); pass its fields as a tuple or dict instead")


def serialize_payload(*, fun_name: str, jaxpr: Jaxpr, in_tree: PyTreeDef,
                      out_tree: PyTreeDef, platforms=("cpu",), nr_devices=1, in_specs=None,
                      disabled_checks=()) -> bytes:
    """Write a closed jaxpr and its argument/result structures in the format above.

    >>> j = ft.make_jaxpr(lambda x: x * 2)(1.0)
    >>> data = serialize_payload(fun_name="f", jaxpr=j, in_tree=tree_structure(((1.0,), {})),
    ...                          out_tree=tree_structure(1.0))
    >>> data[:8], len(deserialize_payload(data)["jaxpr"].eqns)
    (b'FTEXPORT', 1)
    """
    w = _Writer()
    w.jaxpr(jaxpr)
    desc = {"producer": f"functrans {__version__}", "fun_name": fun_name,
            "platforms": list(platforms), "in_tree": encode_tree(in_tree, "arguments"),
            "out_tree": encode_tree(out_tree, "results"), "jaxprs": w.jaxprs,
            "arrays": w.arrays}
    # Optional fields (absent in older exports, read with their defaults).
    scope = next((d.scope for v in jaxpr.invars for d in v.aval.shape if type(d) is DimExpr),
                 None)
    if scope is not None:
        desc["dim_constraints"] = list(scope._constraints)
    if nr_devices != 1:
        desc["nr_devices"] = int(nr_devices)
    if in_specs is not None and any(s is not None for s in in_specs):
        desc["in_specs"] = [None if s is None else [list(e) if isinstance(e, tuple) else e
                                                    for e in s] for s in in_specs]
    if disabled_checks:
        desc["disabled_checks"] = list(disabled_checks)
    return pack(json.dumps(desc, separators=(",", ":"), allow_nan=False).encode(),
                b"".join(w.chunks))


def pack(description: bytes, blob: bytes, version: int = FORMAT_VERSION) -> bytes:
    """Frame a JSON description and array data (the header of the format)."""
    crc = zlib.crc32(blob, zlib.crc32(description))
    return _HEADER.pack(MAGIC, version, len(description), len(blob), crc) + description + blob


# ---- reading ----------------------------------------------------------------------------------
def unpack(data) -> tuple[dict, memoryview]:
    """The JSON description and the array data of an export, after checking the framing."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize expects bytes, got {type(data).__name__}")
    data = memoryview(data).cast("B")
    if len(data) < len(MAGIC) or bytes(data[:len(MAGIC)]) != MAGIC:
        raise NotAnExportError(f"not a functrans export: the data starts with "
                               f"{bytes(data[:8])!r}, an export starts with {MAGIC!r}")
    if len(data) < _HEADER.size:
        raise TruncatedExportError(f"truncated functrans export: {len(data)} bytes, shorter "
                                   f"than the {_HEADER.size}-byte header")
    _, version, n, m, crc = _HEADER.unpack(data[:_HEADER.size])
    if version not in READABLE_VERSIONS:
        raise IncompatibleVersionError(
            f"functrans export format version {version} cannot be read by functrans "
            f"{__version__}, which reads version(s) {', '.join(map(str, READABLE_VERSIONS))}; "
            "export the function again with this version")
    end = _HEADER.size + n + m
    if len(data) < end:
        raise TruncatedExportError(f"truncated functrans export: {len(data)} bytes, the header "
                                   f"announces {end}")
    if len(data) > end:
        raise CorruptExportError(f"functrans export has {len(data) - end} unexpected bytes "
                                 "after its end")
    desc_bytes = data[_HEADER.size:_HEADER.size + n]
    blob = data[_HEADER.size + n:end]
    if zlib.crc32(blob, zlib.crc32(desc_bytes)) != crc:
        raise CorruptExportError("corrupt functrans export: checksum mismatch (the data was "
                                 "changed after it was written)")
    try:
        desc = json.loads(bytes(desc_bytes).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorruptExportError(f"corrupt functrans export: the description is not valid "
                                 f"JSON ({type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(desc, dict):
        raise CorruptExportError("corrupt functrans export: the description is not an object")
    return desc, blob


class _Reader:
    def __init__(self, desc: dict, blob: memoryview):
        self.registry = primitive_registry()
        self.blob = blob
        self.desc = desc
        self.raw_jaxprs = _field(desc, "jaxprs", list, "export")
        self.raw_arrays = _field(desc, "arrays", list, "export")
        self.jaxprs: dict = {}
        self.arrays: dict = {}
        self.active: set = set()
        # Exports with symbolic shapes: their sizes are read into one scope with the
        # export's constraints.
        constraints = desc.get("dim_constraints")
        self.dim_scope = None
        if constraints is not None:
            if not isinstance(constraints, list) or not all(isinstance(c, str) and len(c) < 400
                                                            for c in constraints):
                raise _corrupt("export", "dim_constraints must be strings")
            try:
                self.dim_scope = SymbolicScope(constraints)
            except (ValueError, NotImplementedError) as e:
                raise _corrupt("export", f"bad dim_constraints ({e})") from None

    def array(self, i, where) -> np.ndarray:
        if type(i) is not int or not 0 <= i < len(self.raw_arrays):
            raise _corrupt(where, f"array index {i!r} out of range")
        if i not in self.arrays:
            spec = self.raw_arrays[i]
            w = f"arrays[{i}]"
            dtype = _dtype(_field(spec, "dtype", str, w), w)
            shape = _shape(_field(spec, "shape", list, w), w)
            off, nbytes = _field(spec, "offset", int, w), _field(spec, "nbytes", int, w)
            if nbytes != math.prod(shape) * dtype.itemsize or off < 0 or \
                    off + nbytes > len(self.blob):
                raise _corrupt(w, f"{nbytes} bytes at offset {off} do not hold a "
                               f"{dtype.name}{shape} array inside {len(self.blob)} bytes of data")
            a = np.frombuffer(self.blob[off:off + nbytes], dtype=dtype.newbyteorder("<"))
            a = a.astype(dtype).reshape(shape)  # a native-order copy that owns its memory
            a.flags.writeable = False
            self.arrays[i] = a
        return self.arrays[i]

    def jaxpr(self, i, where) -> Jaxpr:
        if type(i) is not int or not 0 <= i < len(self.raw_jaxprs):
            raise _corrupt(where, f"jaxpr index {i!r} out of range")
        if i in self.jaxprs:
            return self.jaxprs[i]
        if i in self.active:
            raise _corrupt(where, f"jaxpr {i} contains itself")
        self.active.add(i)
        j = self.jaxprs[i] = self._jaxpr_body(self.raw_jaxprs[i], f"jaxprs[{i}]")
        self.active.discard(i)
        return j

    def _jaxpr_body(self, raw, where) -> Jaxpr:
        if not isinstance(raw, dict):
            raise _corrupt(where, "not an object")
        vs = [Var(decode_aval(a, f"{where}.vars[{k}]", self.dim_scope))
              for k, a in enumerate(_field(raw, "vars", list, where))]

        def var(i, w):
            if type(i) is not int or not 0 <= i < len(vs):
                raise _corrupt(w, f"variable index {i!r} out of range")
            return vs[i]

        def atom(x, w):
            if isinstance(x, list) and x and x[0] == "lit":
                if len(x) != 3 or not isinstance(x[2], str):
                    raise _corrupt(w, "a literal is ['lit', aval, hex]")
                aval = decode_aval(x[1], w, self.dim_scope)
                if aval.shape != ():
                    raise _corrupt(w, "literals are scalars")
                return Literal(_scalar_from_hex(aval.dtype, x[2], w), aval)
            return var(x, w)

        constvars = [var(i, where) for i in _field(raw, "constvars", list, where)]
        consts = [self.array(i, f"{where}.consts") for i in _field(raw, "consts", list, where)]
        if len(consts) != len(constvars):
            raise _corrupt(where, f"{len(constvars)} constvars but {len(consts)} consts")
        invars = [var(i, f"{where}.invars") for i in _field(raw, "invars", list, where)]
        eqns = []
        for k, e in enumerate(_field(raw, "eqns", list, where)):
            w = f"{where}.eqns[{k}]"
            if not isinstance(e, dict):
                raise _corrupt(w, "not an object")
            name = _field(e, "prim", str, w)
            prim = self.registry.get(name)
            if prim is None:
                raise UnknownPrimitiveError(
                    f"corrupt or incompatible functrans export: {w} uses primitive {name!r}, "
                    "which this process does not know (a primitive defined outside functrans "
                    "must be registered, by importing its module, before deserializing)")
            params = {}
            for pk, pv in _field(e, "params", dict, w).items():
                params[pk] = self.value(pv, f"{w}.params[{pk!r}]")
            src = e.get("src")
            eqns.append(Eqn(prim, [atom(x, w) for x in _field(e, "in", list, w)],
                            [var(i, w) for i in _field(e, "out", list, w)], params,
                            _source(src, w)))
        outvars = [atom(x, f"{where}.outvars") for x in _field(raw, "outvars", list, where)]
        return Jaxpr(constvars, consts, invars, outvars, eqns)

    def value(self, v, where):
        if not (isinstance(v, list) and v and isinstance(v[0], str)):
            raise _corrupt(where, f"a param value is a tagged list, got {v!r:.60}")
        tag, args = v[0], v[1:]
        want = _ARITY.get(tag)
        if want is None:
            raise _corrupt(where, f"unknown param type tag {tag!r}")
        if len(args) != want:
            raise _corrupt(where, f"tag {tag!r} takes {want} value(s), got {len(args)}")
        if tag == "none":
            return None
        x = args[0]
        if tag == "bool" and type(x) is bool or tag == "int" and type(x) is int \
                or tag == "str" and type(x) is str:
            return x
        if tag == "float" and type(x) is str:
            try:
                return float.fromhex(x)
            except ValueError:
                raise _corrupt(where, f"bad float {x!r:.40}") from None
        if tag == "tuple" and type(x) is list:
            return tuple(self.value(y, f"{where}[{i}]") for i, y in enumerate(x))
        if tag == "dtype" and type(x) is str:
            return _dtype(x, where)
        if tag == "jaxpr":
            return self.jaxpr(x, where)
        if tag == "array":
            return self.array(x, where)
        if tag == "aval":
            return decode_aval(x, where, self.dim_scope)
        if tag == "dim" and type(x) is str:
            return _dim(x, self.dim_scope, where)
        if tag == "scalar" and type(x) is str and type(args[1]) is str:
            return _scalar_from_hex(_dtype(x, where), args[1], where)[()]
        raise _corrupt(where, f"malformed {tag!r} value {v!r:.60}")


_ARITY = {"none": 0, "bool": 1, "int": 1, "float": 1, "str": 1, "tuple": 1, "dtype": 1,
          "jaxpr": 1, "array": 1, "aval": 1, "scalar": 2, "dim": 1}


def _corrupt(where, what) -> CorruptExportError:
    return CorruptExportError(f"corrupt functrans export: {where}: {what}")


def _field(obj, key, typ, where):
    if not isinstance(obj, dict):
        raise _corrupt(where, "not an object")
    if key not in obj:
        raise _corrupt(where, f"missing field {key!r}")
    v = obj[key]
    if not isinstance(v, typ) or (typ is int and type(v) is bool):
        raise _corrupt(where, f"field {key!r} should be a {typ.__name__}, got {v!r:.60}")
    return v


def _dtype(name, where) -> np.dtype:
    d = _known_dtype(name)
    if d is None:
        raise _corrupt(where, f"unsupported dtype {name!r:.40}")
    return d


def _shape(dims, where, scope=None) -> tuple:
    if not isinstance(dims, list) or not all(
            type(d) is int and d >= 0 or scope is not None and type(d) is str for d in dims):
        raise _corrupt(where, f"bad shape {dims!r:.60}")
    return tuple(_dim(d, scope, where) if type(d) is str else d for d in dims)


_DIM_TEXT = re.compile(r"[A-Za-z0-9_ +\-*^(),]{1,400}")


def _dim(text, scope, where):
    """A symbolic size from its text, in the export's scope (untrusted: short, JAX's syntax,
    exponents below 100)."""
    if scope is None or not _DIM_TEXT.fullmatch(text) or re.search(r"\^\s*\d{3}", text):
        raise _corrupt(where, f"bad symbolic dimension {text!r:.60}")
    try:
        d, = parse_dims(text, scope, repr(text))
    except ValueError as e:
        raise _corrupt(where, f"bad symbolic dimension {text!r:.60} ({e})") from None
    return d


def decode_aval(raw, where, scope=None) -> ShapedArray:
    if not (isinstance(raw, list) and len(raw) == 3 and type(raw[2]) is bool):
        raise _corrupt(where, f"an aval is [dtype, shape, weak_type], got {raw!r:.60}")
    return ShapedArray(_shape(raw[1], where, scope), _dtype(raw[0], where), raw[2])


def _scalar_from_hex(dtype, text, where) -> np.ndarray:
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise _corrupt(where, f"bad hex {text!r:.40}") from None
    if len(raw) != dtype.itemsize:
        raise _corrupt(where, f"a {dtype.name} scalar has {dtype.itemsize} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(())


def _source(src, where):
    if src is None:
        return None
    if not (isinstance(src, list) and len(src) == 3 and type(src[0]) is str
            and type(src[1]) is int and type(src[2]) is str):
        raise _corrupt(where, f"bad source location {src!r:.60}")
    return SourceInfo(*src)


def decode_tree(raw, reader: _Reader | None = None, where="tree") -> PyTreeDef:
    """The PyTreeDef written by :func:`encode_tree`.

    >>> decode_tree(encode_tree(tree_structure([1, (2,)])))
    PyTreeDef([*, (*,)])
    """
    reader = reader or _Reader({"jaxprs": [], "arrays": []}, memoryview(b""))
    if not (isinstance(raw, list) and raw and isinstance(raw[0], str)):
        raise _corrupt(where, f"bad tree {raw!r:.60}")
    kind = raw[0]
    if kind == "*" and len(raw) == 1:
        return PyTreeDef(None, None, ())
    if kind == "None" and len(raw) == 1:
        return PyTreeDef(type(None), None, ())
    if kind in ("tuple", "list") and len(raw) == 2 and isinstance(raw[1], list):
        kids = tuple(decode_tree(c, reader, where) for c in raw[1])
        return PyTreeDef(tuple if kind == "tuple" else list, None, kids)
    if kind in ("dict", "OrderedDict") and len(raw) == 3 and isinstance(raw[1], list) \
            and isinstance(raw[2], list) and len(raw[1]) == len(raw[2]):
        keys = tuple(reader.value(k, f"{where} key") for k in raw[1])
        kids = tuple(decode_tree(c, reader, where) for c in raw[2])
        if kind == "dict":
            try:  # flattening sorts dict keys: a tree with other keys would never match
                ok = list(keys) == sorted(set(keys))
            except TypeError:
                ok = False
            if not ok:
                raise _corrupt(where, "dict keys must be distinct, sortable and sorted")
        else:
            try:
                ok = len(set(keys)) == len(keys)
            except TypeError:
                ok = False
            if not ok:
                raise _corrupt(where, "OrderedDict keys must be distinct and hashable")
        return PyTreeDef(dict if kind == "dict" else OrderedDict, keys, kids)
    raise _corrupt(where, f"bad tree node {raw!r:.60}")


def deserialize_payload(data) -> dict:
    """Read an export: ``{"fun_name", "platforms", "in_tree", "out_tree", "jaxpr"}``; the jaxpr
    has passed ``check_jaxpr``. Raises an :class:`ExportError` subclass for bad input."""
    desc, blob = unpack(data)
    reader = _Reader(desc, blob)
    fun_name = _field(desc, "fun_name", str, "export")
    platforms = _field(desc, "platforms", list, "export")
    if not all(isinstance(p, str) for p in platforms):
        raise _corrupt("export", "platforms must be strings")
    if not reader.raw_jaxprs:
        raise _corrupt("export", "no program")
    try:
        jaxpr = reader.jaxpr(0, "export")
        in_tree = decode_tree(_field(desc, "in_tree", list, "export"), reader, "in_tree")
        out_tree = decode_tree(_field(desc, "out_tree", list, "export"), reader, "out_tree")
        check_jaxpr(jaxpr)
    except ExportError:
        raise
    except JaxprTypeError as e:
        raise CorruptExportError(f"corrupt functrans export: the program is ill-typed: "
                                 f"{e}") from None
    except RecursionError:
        raise CorruptExportError("corrupt functrans export: the description nests too "
                                 "deeply") from None
    except Exception as e:  # noqa: BLE001  untrusted input: no other error type may escape
        raise CorruptExportError(f"corrupt functrans export: the program could not be "
                                 f"checked ({type(e).__name__}: {e})") from None
    if in_tree.num_leaves != len(jaxpr.invars) or out_tree.num_leaves != len(jaxpr.outvars):
        raise _corrupt("export", f"the argument/result structures have {in_tree.num_leaves}/"
                       f"{out_tree.num_leaves} leaves, the program {len(jaxpr.invars)}/"
                       f"{len(jaxpr.outvars)}")
    nr_devices = desc.get("nr_devices", 1)
    if not isinstance(nr_devices, int) or isinstance(nr_devices, bool) or nr_devices < 1:
        raise _corrupt("export", f"nr_devices should be a positive int, got {nr_devices!r:.40}")
    in_specs = _specs(desc.get("in_specs"), len(jaxpr.invars))
    checks = desc.get("disabled_checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
        raise _corrupt("export", "disabled_checks must be strings")
    return {"fun_name": fun_name, "platforms": tuple(platforms), "in_tree": in_tree,
            "out_tree": out_tree, "jaxpr": jaxpr, "nr_devices": nr_devices,
            "in_specs": in_specs, "disabled_checks": checks}


def _specs(raw, n: int):
    """Per argument leaf, its PartitionSpec (or None), from the optional ``in_specs``."""
    from functrans.core.mesh import PartitionSpec
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != n:
        raise _corrupt("export", "in_specs should have one entry per argument leaf")
    out = []
    for s in raw:
        if s is None:
            out.append(None)
            continue
        ok = isinstance(s, list) and all(
            e is None or isinstance(e, str) or
            isinstance(e, list) and all(isinstance(a, str) for a in e) for e in s)
        if not ok:
            raise _corrupt("export", f"bad partition spec {s!r:.60}")
        out.append(PartitionSpec(*[tuple(e) if isinstance(e, list) else e for e in s]))
    return out
