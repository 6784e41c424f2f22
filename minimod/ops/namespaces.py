"""MXNet's namespaces of prefixed operators: `mx.sym.contrib.X` / `mx.nd.contrib.X` is operator
`_contrib_X`, `linalg.X` is `_linalg_X`, `image.X` is `_image_X`. The modules
`minimod/symbol/{contrib,linalg,image}.py` and `minimod/ndarray/{contrib,linalg,image}.py` are
these namespaces; `module_hooks` gives each its module-level `__getattr__` and `__dir__`."""
from __future__ import annotations

from typing import Callable

from .registry import list_ops

__all__ = ["module_hooks", "prefixed_name", "prefixed_names"]


def prefixed_name(prefix: str, name: str):
    """The registered operator `<prefix><name>`, or None when there is none."""
    if name.startswith("__"):
        return None
    full = prefix + name
    return full if full in list_ops() else None


def prefixed_names(prefix: str) -> list:
    """Every short name the namespace of `prefix` offers."""
    return sorted(k[len(prefix):] for k in list_ops() if k.startswith(prefix))


def module_hooks(module_globals: dict, prefix: str, make: Callable) -> tuple:
    """(`__getattr__`, `__dir__`) for a namespace module over the operators `<prefix>X`;
    `make(short, op_name)` builds the function for `X` (a symbol constructor, or an imperative
    call). Each function is made on first use and kept in the module."""
    module_name = module_globals["__name__"]

    def __getattr__(short: str):
        op_name = prefixed_name(prefix, short)
        if op_name is None:
            raise AttributeError("module '%s' has no attribute '%s'" % (module_name, short))
        fn = make(short, op_name)
        module_globals[short] = fn
        return fn

    def __dir__():
        return sorted(set(module_globals) | set(prefixed_names(prefix)))

    return __getattr__, __dir__
