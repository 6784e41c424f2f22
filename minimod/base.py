"""Errors and small helpers shared by every layer.

Every error minimod raises on bad input is a subclass of `MXNetError`, so code written for MXNet
(`except mx.base.MXNetError`) keeps working, and each subclass says which stage objected.
"""
from __future__ import annotations

import os
from typing import Any, Union

import numpy as np

__all__ = [
    "data_dir", "data_dir_default",
    "MXNetError", "ShapeError", "DTypeError", "OpParamError", "BindError", "GraphError",
    "FileFormatError", "MissingDependencyError", "MissingParamError", "NonFiniteError",
    "_as_list", "string_types",
    "numeric_types", "integer_types", "atomic_write", "py_str", "mx_real_t", "mx_uint",
    "NotImplementedForSymbol", "NotSupportedForSparseNDArray", "mxnet_error_from",
]

string_types = (str,)
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
#: MXNet's default real type, float32
mx_real_t = np.float32
#: MXNet's unsigned index type (a C uint32 in its ABI), as a NumPy type
mx_uint = np.uint32


def data_dir_default() -> str:
    """Where MXNet keeps downloaded data by default: %APPDATA%\\mxnet on Windows, else
    ~/.mxnet."""
    if os.name == "nt":
        return os.path.join(os.environ.get("APPDATA", os.path.expanduser("~")), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """$MXNET_HOME, else `data_dir_default()` (MXNet's data folder: models, datasets)."""
    return os.getenv("MXNET_HOME", data_dir_default())


def py_str(value) -> str:
    """A str from bytes (UTF-8) or from a str, as MXNet's `py_str` gives C strings."""
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


class MXNetError(Exception):
    """Base class of every error minimod raises for bad input or misuse."""


class NotImplementedForSymbol(MXNetError, NotImplementedError):
    """An NDArray method or function that a Symbol does not offer (`Symbol.wait_to_read`,
    `Symbol.asnumpy` ...); the message names it."""

    def __init__(self, function, alias=None, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = tuple(str(type(a)) for a in args)

    def __str__(self):
        name = self.alias or self.function
        msg = "Function %s" % name
        if self.args:
            msg += " (with arguments %s)" % ", ".join(self.args)
        return msg + " is not implemented for Symbol and only available in NDArray."


class NotSupportedForSparseNDArray(MXNetError):
    """An operation that minimod's (dense-only) NDArrays cannot do on sparse storage."""


class ShapeError(MXNetError, ValueError):
    """Shapes that contradict each other, or a shape that cannot be decided."""


class DTypeError(MXNetError, TypeError):
    """Data types that contradict each other."""


class OpParamError(MXNetError, ValueError):
    """An operator parameter that is unknown, missing or malformed."""


class BindError(MXNetError, ValueError):
    """Arrays handed to bind/simple_bind that do not fit the symbol."""


class GraphError(MXNetError, ValueError):
    """A symbol graph that is malformed (bad JSON, unknown operator, bad composition)."""


class FileFormatError(MXNetError, ValueError):
    """A file (`.params`, `.states`, symbol JSON) that is missing, truncated, corrupt or
    hostile; the message names the file."""


class MissingParamError(MXNetError, RuntimeError):
    """Parameters a module needs that the given arg_params/aux_params lack (a RuntimeError,
    as in MXNet)."""


class MissingDependencyError(MXNetError, ImportError):
    """An optional package (graphviz, matplotlib) that a feature needs is not installed."""


class NonFiniteError(MXNetError, FloatingPointError):
    """The NaN guard (`mx.numerics.nan_guard`) found a NaN or infinity in an output or a
    gradient; the message names the node (and, under `fit`, the epoch and batch)."""


#: the builtin exception types MXNet's errors also are (its IndexError is an MXNetError too)
_BUILTIN_KINDS = (IndexError, KeyError, ValueError, TypeError, AttributeError,
                  NotImplementedError, ZeroDivisionError)
_KIND_CLASSES: dict = {}


def mxnet_error_from(err: BaseException, message: str) -> MXNetError:
    """An MXNetError carrying `message` for `err`, a failure raised inside an operator,
    which is also an instance of err's builtin kind (IndexError, ValueError ...), as MXNet's
    errors are: `except IndexError` and `except MXNetError` both catch it."""
    kind = next((k for k in _BUILTIN_KINDS if isinstance(err, k)), None)
    if kind is None:
        return MXNetError(message)
    cls = _KIND_CLASSES.get(kind)
    if cls is None:
        cls = _KIND_CLASSES[kind] = type("MXNet" + kind.__name__, (MXNetError, kind), {
            "__module__": __name__,
            "__doc__": "An MXNetError that is also a %s." % kind.__name__})
    return cls(message)


def _as_list(obj: Any) -> list:
    """Return `obj` as a list: lists and tuples as a list of their items, anything else wrapped."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return [obj]


def flatten_nested(value: Any, leaf: type, what: str) -> tuple:
    """(the `leaf` objects of a leaf or a nested list of them, its layout: None for a leaf,
    else the list of its members' layouts), the structures MXNet's control flow takes and
    gives back (`regroup_nested` rebuilds one)."""
    if isinstance(value, leaf):
        return [value], None
    if not isinstance(value, (list, tuple)):
        raise TypeError("%s must be a %s or a (nested) list of them, got %s"
                        % (what, leaf.__name__, type(value).__name__))
    flat, layout = [], []
    for member in value:
        items, sub = flatten_nested(member, leaf, what)
        flat.extend(items)
        layout.append(sub)
    return flat, layout


def regroup_nested(flat: list, layout: Any) -> Any:
    """The nested list `flatten_nested` took apart, rebuilt from `flat` (consumed from the
    front)."""
    if layout is None:
        return flat.pop(0)
    return [regroup_nested(flat, sub) for sub in layout]


def atomic_write(fname, payload: Union[bytes, str]) -> None:
    """Write `payload` to `fname` so that the file is either the old one or the whole new one.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the
    temporary file is renamed over `fname`; on any error it is removed and `fname` is untouched.
    """
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    fname = os.fspath(fname)
    directory = os.path.dirname(os.path.abspath(fname))
    tmp = os.path.join(directory, ".%s.%d.%s.tmp" % (os.path.basename(fname), os.getpid(),
                                                     os.urandom(4).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, fname)
        _fsync_directory(directory)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _fsync_directory(directory: str) -> None:
    """Make a rename in `directory` durable (POSIX); a no-op where directories cannot be
    opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
