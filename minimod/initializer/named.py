"""Initializers that choose by parameter name: Load (from saved arrays) and Mixed (the first
matching regex picks the initializer).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from ..base import ShapeError
from ..checkpoint import unprefixed
from ..ndarray import NDArray
from ..ndarray import load as nd_load
from .base import InitError


class Load:
    """Initialise from saved parameters: a dict name -> NDArray or a `.params` file name.

    `arg:` and `aux:` prefixes are stripped. Names not found go to `default_init` (an error
    when there is none); a stored array of another shape is an error.
    """

    def __init__(self, param: str | Mapping[str, NDArray], default_init: Optional[Any] = None,
                 verbose: bool = False):
        if isinstance(param, str):
            param = nd_load(param)
        if not isinstance(param, Mapping):
            raise InitError("Load needs a dict of named arrays or a .params file holding one, "
                            f"got {type(param).__name__}")
        self.param = {unprefixed(name): arr for name, arr in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: str, arr: Any) -> None:
        if name in self.param:
            stored = self.param[name]
            if tuple(arr.shape) != tuple(stored.shape):
                raise ShapeError(f"Parameter {name!r} cannot be initialized from loading: "
                                 f"shape mismatch, target {tuple(arr.shape)} vs loaded "
                                 f"{tuple(stored.shape)}")
            arr[:] = stored
            if self.verbose:
                logging.info("Initialized %s by loading", name)
            return
        if self.default_init is None:
            raise InitError(f"Cannot initialize {name!r}: not found in the loaded parameters "
                            "and no default_init was given")
        self.default_init(name, arr)
        if self.verbose:
            logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by name: the first regex in `patterns` that matches (re.match)
    the parameter name wins."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]):
        if len(patterns) != len(initializers):
            raise InitError(f"Mixed needs one initializer per pattern, got {len(patterns)} "
                            f"patterns and {len(initializers)} initializers")
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name: str, arr: Any) -> None:
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        raise InitError(f"Parameter name {name!r} did not match any pattern of Mixed "
                        f"{[p.pattern for p, _ in self.map]}; add a '.*' pattern at the end "
                        "with a default initializer")
