"""The string attributes MXNet keeps on graph nodes, and how minimod reads them.

- hidden keys: a few attributes (`lr_mult`, `ctx_group` ...) are stored under a dunder name
  (`__lr_mult__`), as MXNet stores them; legacy JSON files write them plainly;
- `__shape__` and `__dtype__` on a variable: a declared shape (a hint for inference) and a
  declared dtype, by MXNet's type code; `__storage_type__`, a declared storage type, by
  MXNet's storage-type code (`STYPE_CODES`, the codes NDArray file records hold too).

They live beside the graph records because the symbol layer writes them and the passes and
the JSON reader read them.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..base import ShapeError
from ..shape_semantics import api_shape_in

__all__ = ["HIDDEN_KEYS", "hidden_key", "DTYPE_MX_TO_NP", "DTYPE_NP_TO_MX", "STYPE_CODES",
           "STYPE_NAMES", "parse_shape_attr"]

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
               "profiler_scope")

DTYPE_MX_TO_NP = {0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8, 4: np.int32,
                  5: np.int8, 6: np.int64, 7: np.bool_}
DTYPE_NP_TO_MX = {np.dtype(v): k for k, v in DTYPE_MX_TO_NP.items()}
STYPE_CODES = {"default": 0, "row_sparse": 1, "csr": 2}
STYPE_NAMES = {code: name for name, code in STYPE_CODES.items()}


def hidden_key(key: str) -> str:
    """MXNet stores some attributes under a dunder name: lr_mult -> __lr_mult__."""
    return "__%s__" % key if key in HIDDEN_KEYS else key


def parse_shape_attr(text: str) -> Optional[tuple]:
    """MXNet's `__shape__` attribute as a shape with None for unknown dims, or None if empty.

    The frontends write `str(shape)`: "(0, 5)", "(5,)", "[2, 3]", "5" (Python 2 added "L" to
    long ints). A 0 dim is unknown in MXNet's legacy shapes and -1 in both; under `mx.np_shape` a
    0 dim is a zero size and "()" a scalar.
    """
    body = text.strip().strip("()[]")
    dims = [d.strip().rstrip("lL") for d in body.split(",")]
    dims = [d for d in dims if d]
    try:
        values = [int(d) for d in dims]
    except ValueError:
        raise ShapeError("shape attribute %r is not a tuple of integers" % (text,)) from None
    return api_shape_in(values)  # no dims: an unknown shape, or a scalar under np_shape
