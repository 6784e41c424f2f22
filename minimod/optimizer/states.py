"""Optimizer states as bytes: minimod's pickle-free format, and MXNet's pickles read safely.

What `Updater.get_states` / `set_states` read and write:

* minimod's own format contains no pickle. It is a `.params`-format NDArray file: each state
  array is stored under `"<key>:<slot>"` (slots number the arrays of a state in flattening order),
  plus one uint8 array under `"__minimod_states__"` holding a UTF-8 JSON header: format version,
  each key with its type (int or str) and the shape of its state (None, an array slot, or a
  tuple/list of those), and the optimizer's update counters. `mx.nd.load` reads it as well.
* MXNet's `.states` files are pickles. `set_states` reads them through `SafeStatesUnpickler`,
  which admits only the NDArray class (`mxnet.ndarray.ndarray.NDArray`, decoded from its binary
  record) and a few inert builtins; anything else raises `UnsafeStatesError` naming the global,
  before any of it runs. `dump_states_mxnet(states)` writes a pickle MXNet 1.9.1 accepts, without
  importing MXNet.
* Keys: without a kvstore, Module keys parameter i on device k as `i * num_device + k`; with
  update on kvstore the key is the parameter name. `Updater.states_by_name(idx2name)` and
  `Updater.load_states_by_name(by_name, idx2name)` translate between the two, so a checkpoint
  survives a change of device count or kvstore mode; `dump_states_by_name` /
  `set_states_by_name` do the same through bytes.

Bends from MXNet, each deliberate: `set_states` never runs pickled code (a `dump_optimizer=True`
MXNet file is refused since it pickles an Optimizer object); in the native format the update
counters are saved, and `set_states(data, restore_counters=True)` restores them (off by default,
so a resumed run matches MXNet, which restarts the counts).
"""
from __future__ import annotations

import io
import json
import pickle
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import backend
from ..base import MXNetError
from ..context import cpu
from ..ndarray import serialization
from ..ndarray.ndarray import NDArray, wrap
from .base import Optimizer

__all__ = ["SafeStatesUnpickler", "UnsafeStatesError", "dump_states_mxnet", "load_states"]


class UnsafeStatesError(MXNetError, pickle.UnpicklingError):
    """A pickled `.states` payload referenced something other than NDArray records."""


def _safe_bytearray(*args):
    if args and not isinstance(args[0], (bytes, bytearray, str)):
        raise UnsafeStatesError("refused global builtins.bytearray called with a "
                                f"{type(args[0]).__name__} (only bytes are accepted)")
    return bytearray(*args)


def _safe_bytes(*args):
    if args and not isinstance(args[0], (bytes, bytearray, str)):
        # bytes(n) would allocate n bytes named by the file
        raise UnsafeStatesError("refused global builtins.bytes called with a "
                                f"{type(args[0]).__name__} (only bytes are accepted)")
    return bytes(*args)


def _safe_codecs_encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnsafeStatesError("refused global _codecs.encode with arguments other than "
                                "(str, 'latin1')")
    return text.encode("latin1")


_ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("mxnet.ndarray.ndarray", "NDArray"): NDArray,
    ("minimod.ndarray.ndarray", "NDArray"): NDArray,
    ("builtins", "bytearray"): _safe_bytearray,
    ("__builtin__", "bytearray"): _safe_bytearray,
    ("builtins", "bytes"): _safe_bytes,
    ("builtins", "tuple"): tuple,
    ("builtins", "list"): list,
    ("builtins", "dict"): dict,
    ("builtins", "set"): set,
    ("_codecs", "encode"): _safe_codecs_encode,
}


class SafeStatesUnpickler(pickle.Unpickler):
    """An unpickler for MXNet `.states` payloads that only admits NDArray records and inert
    builtins; any other global raises UnsafeStatesError before it can be called."""

    def find_class(self, module: str, name: str) -> Any:
        target = _ALLOWED_GLOBALS.get((module, name))
        if target is None:
            hint = (" (an Optimizer object: MXNet wrote this file with dump_optimizer=True, "
                    "which minimod does not load)" if "optimizer" in module else "")
            raise UnsafeStatesError(f"refused global {module}.{name} in a pickled optimizer "
                                    f"states payload: only NDArray records are accepted{hint}")
        return target

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafeStatesError("refused persistent id in a pickled optimizer states payload")


def load_states(data: bytes) -> dict:
    """Decode a states payload: minimod's native format or MXNet's pickle (read safely).

    Returns {key: None | NDArray | tuple of NDArrays}. Raises UnsafeStatesError for a pickle
    that references anything but NDArray records, MXNetError for malformed input.
    """
    states, _header = _decode_states(data)
    return states


_NATIVE_HEADER_KEY = "__minimod_states__"
_NATIVE_FORMAT = "minimod-optimizer-states"
_LIST_PREFIX = struct.pack("<Q", serialization.LIST_MAGIC)


def _decode_states(data: bytes) -> tuple[dict, dict | None]:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"optimizer states must be bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:8] == _LIST_PREFIX:
        return _decode_native(data)
    try:
        _check_pickle_sizes(data)
        loaded = SafeStatesUnpickler(io.BytesIO(data)).load()
    except UnsafeStatesError:
        raise
    except MXNetError:
        raise
    except Exception as err:
        raise MXNetError(f"cannot read optimizer states: not minimod's format and not a "
                         f"readable MXNet pickle ({type(err).__name__}: {err})") from None
    if isinstance(loaded, tuple) and len(loaded) == 2:
        loaded = loaded[0]
    if not isinstance(loaded, dict):
        raise MXNetError(f"MXNet optimizer states must pickle a dict, got "
                         f"{type(loaded).__name__}")
    for key, state in loaded.items():
        _check_state(key, state)
    return loaded, None


def _check_pickle_sizes(data: bytes) -> None:
    """Walk the pickle's opcodes (pickletools runs nothing) so that a forged length is caught
    before the unpickler allocates a buffer of that length."""
    import pickletools
    try:
        for opcode, arg, pos in pickletools.genops(data):
            # the unpickler grows its memo table to the index it is given: a forged index
            # would allocate gigabytes, while a real pickle never indexes past its own length
            if opcode.name in _MEMO_OPCODES and not 0 <= int(arg) <= len(data):
                raise ValueError(f"memo index {arg} at byte {pos} is out of range")
    except Exception as err:
        raise MXNetError(f"cannot read optimizer states: not minimod's format and not a "
                         f"readable MXNet pickle ({err})") from None


_MEMO_OPCODES = frozenset(["PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET"])


def _check_state(key, state) -> None:
    if state is None or isinstance(state, NDArray):
        return
    if isinstance(state, (tuple, list)):
        for item in state:
            _check_state(key, item)
        return
    raise MXNetError(f"optimizer state of key {key!r} holds a {type(state).__name__}; "
                     "only NDArrays, None and tuples of them are accepted")


def _flatten(state, arrays: list) -> Any:
    """The structure descriptor of `state`, appending its arrays to `arrays`."""
    if state is None:
        return None
    if isinstance(state, NDArray):
        arrays.append(state)
        return len(arrays) - 1
    if isinstance(state, (tuple, list)):
        return {"tuple" if isinstance(state, tuple) else "list":
                [_flatten(item, arrays) for item in state]}
    raise MXNetError(f"cannot save an optimizer state of type {type(state).__name__}")


def _unflatten(desc, arrays: list, key) -> Any:
    if desc is None:
        return None
    if isinstance(desc, int):
        if not 0 <= desc < len(arrays) or arrays[desc] is None:
            raise MXNetError(f"optimizer states: key {key!r} refers to a missing array "
                             f"slot {desc}")
        return arrays[desc]
    if isinstance(desc, dict) and len(desc) == 1:
        kind, items = next(iter(desc.items()))
        if kind in ("tuple", "list") and isinstance(items, list):
            built = [_unflatten(item, arrays, key) for item in items]
            return tuple(built) if kind == "tuple" else built
    raise MXNetError(f"optimizer states: malformed structure for key {key!r}: {desc!r}")


def _encode_native(states: Mapping, optimizer: Optimizer | None,
                   dump_optimizer: bool = False, name_counts: Mapping | None = None) -> bytes:
    named: dict[str, NDArray] = {}
    entries = []
    seen: dict[str, Any] = {}
    for key, state in states.items():
        if not isinstance(key, (int, str)) or isinstance(key, bool):
            raise MXNetError(f"optimizer state key {key!r} must be an int or a str")
        label = str(key)
        if label in seen:
            raise MXNetError(f"optimizer state keys {seen[label]!r} and {key!r} collide")
        seen[label] = key
        arrays: list = []
        desc = _flatten(state, arrays)
        for slot, arr in enumerate(arrays):
            named[f"{label}:{slot}"] = arr
        entries.append({"key": key, "type": "int" if isinstance(key, int) else "str",
                        "state": desc})
    header: dict[str, Any] = {"format": _NATIVE_FORMAT, "version": 1, "keys": entries}
    if optimizer is not None:
        header["counters"] = {
            "num_update": optimizer.num_update,
            "begin_num_update": optimizer.begin_num_update,
            "index_update_counts": [
                [device, [[k, c] for k, c in counts.items()]]
                for device, counts in optimizer._all_index_update_counts.items()],
        }
        if dump_optimizer:
            header["optimizer"] = {"class": type(optimizer).__name__.lower(),
                                   "attrs": _simple_attrs(optimizer)}
    if name_counts is not None:
        header["name_counts"] = dict(name_counts)
    blob = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8).copy()
    named[_NATIVE_HEADER_KEY] = wrap(blob, cpu(0))
    return serialization.save_to_bytes(named)


def _simple_attrs(optimizer: Optimizer) -> dict:
    out = {}
    for name, value in optimizer.__dict__.items():
        if name.startswith("_") or name in ("param_dict", "sym_info", "lr_scheduler"):
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        if isinstance(value, dict) and any(not isinstance(k, str) for k in value):
            continue
        out[name] = value
    return out


def _decode_native(data: bytes) -> tuple[dict, dict]:
    try:
        return _decode_native_unchecked(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as err:
        if isinstance(err, MXNetError):
            raise
        raise MXNetError(f"optimizer states: malformed header ({type(err).__name__}: "
                         f"{err})") from None


def _decode_native_unchecked(data: bytes) -> tuple[dict, dict]:
    loaded = serialization.load_from_bytes(data, source="optimizer states")
    if not isinstance(loaded, dict) or _NATIVE_HEADER_KEY not in loaded:
        raise MXNetError("optimizer states: an NDArray file without the minimod states header "
                         f"{_NATIVE_HEADER_KEY!r} (a .params file?)")
    raw = loaded.pop(_NATIVE_HEADER_KEY)
    try:
        header = json.loads(backend.asnumpy(raw._data).astype(np.uint8).tobytes().decode())
    except (UnicodeDecodeError, ValueError) as err:
        raise MXNetError(f"optimizer states: unreadable header ({err})") from None
    if not isinstance(header, dict) or (header.get("format"), header.get("version")) != (
            _NATIVE_FORMAT, 1):
        found = header if not isinstance(header, dict) else (header.get("format"),
                                                             header.get("version"))
        raise MXNetError(f"optimizer states: unknown header {found!r} (expected format "
                         f"{_NATIVE_FORMAT!r} version 1)")
    _check_native_header(header)
    slots_per_label: dict = {}
    for name in loaded:
        label = name.rpartition(":")[0]
        slots_per_label[label] = slots_per_label.get(label, 0) + 1
    states = {}
    for entry in header["keys"]:
        key = entry["key"]
        key = int(key) if entry["type"] == "int" else str(key)
        label = str(key)
        arrays = [loaded.get(f"{label}:{slot}") for slot in range(slots_per_label.get(label, 0))]
        states[key] = _unflatten(entry["state"], arrays, key)
    return states, header


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _header_error(what: str) -> MXNetError:
    return MXNetError(f"optimizer states: malformed header: {what}")


def _check_native_header(header: dict) -> None:
    """Check every field later code reads, so a forged header fails here, by name."""
    keys = header.get("keys")
    if not isinstance(keys, list):
        raise _header_error("'keys' must be a list")
    for entry in keys:
        if not isinstance(entry, dict) or entry.get("type") not in ("int", "str") or not (
                _is_int(entry.get("key")) or isinstance(entry.get("key"), str)):
            raise _header_error(f"bad key entry {entry!r:.80}")
    counters = header.get("counters", {})
    if not isinstance(counters, dict) or not all(
            _is_int(counters.get(k, 0)) for k in ("num_update", "begin_num_update")):
        raise _header_error("'counters' must hold integer update counts")
    per_device = counters.get("index_update_counts", [])
    if not isinstance(per_device, list) or not all(
            isinstance(item, list) and len(item) == 2 and _is_int(item[0])
            and isinstance(item[1], list)
            and all(isinstance(kc, list) and len(kc) == 2 and _is_int(kc[1])
                    and (_is_int(kc[0]) or isinstance(kc[0], str)) for kc in item[1])
            for item in per_device):
        raise _header_error("'index_update_counts' must be [[device, [[key, count] ...]] ...]")
    name_counts = header.get("name_counts", {})
    if not isinstance(name_counts, dict) or not all(_is_int(c) for c in name_counts.values()):
        raise _header_error("'name_counts' must map names to integer counts")
    record = header.get("optimizer", {})
    if not isinstance(record, dict) or not isinstance(record.get("class", ""), str) or \
            not isinstance(record.get("attrs", {}), dict):
        raise _header_error("'optimizer' must be {'class': str, 'attrs': {...}}")


def _restore_counters(optimizer: Optimizer, counters: dict) -> None:
    optimizer.num_update = max(optimizer.num_update, int(counters.get("num_update", 0)))
    for device, counts in counters.get("index_update_counts", []):
        table = optimizer._all_index_update_counts.setdefault(device, {})
        for key, count in counts:
            table[key] = count
    optimizer._index_update_count = optimizer._all_index_update_counts.setdefault(0, {})


# ---------------------------------------------------------------------------- MXNet pickle

def _pickle_key(key) -> bytes:
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise MXNetError(f"optimizer state key {key!r} must be an int or a str")
    if isinstance(key, str):
        raw = key.encode("utf-8")
        return b"X" + struct.pack("<I", len(raw)) + raw          # BINUNICODE
    if -2 ** 31 <= key < 2 ** 31:
        return b"J" + struct.pack("<i", key)                      # BININT
    raw = key.to_bytes((key.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw                      # LONG1


def _pickle_state(state) -> bytes:
    if state is None:
        return b"N"
    if isinstance(state, NDArray):
        record = serialization.write_record(state)
        return (b"cmxnet.ndarray.ndarray\nNDArray\n" + b"N\x85R"           # NDArray(None)
                + b"}X\x06\x00\x00\x00handle"                              # {'handle':
                + b"cbuiltins\nbytearray\n" + b"B" + struct.pack("<I", len(record)) + record
                + b"\x85Rs" + b"b")                                        # bytearray(..)}
    if isinstance(state, (tuple, list)):
        body = b"".join(_pickle_state(item) for item in state)
        if isinstance(state, list):
            return b"](" + body + b"e"
        return b"(" + body + b"t"
    raise MXNetError(f"cannot write an optimizer state of type {type(state).__name__} "
                     "for MXNet")


def dump_states_mxnet(states: Mapping) -> bytes:
    """`states` ({key: None | NDArray | tuple}) as the pickle MXNet 1.9.1's
    `Updater.set_states` / `Module.load_optimizer_states` read.

    Written opcode by opcode (protocol 3: no memo, GLOBAL references to
    `mxnet.ndarray.ndarray.NDArray` and `builtins.bytearray`), so MXNet is not imported.
    """
    parts = [b"\x80\x03}("]                                   # PROTO 3, EMPTY_DICT, MARK
    for key, state in states.items():
        parts.append(_pickle_key(key))
        parts.append(_pickle_state(state))
    parts.append(b"u.")                                        # SETITEMS, STOP
    return b"".join(parts)
