"""minimod: MXNet 1.x's symbolic Module stack, re-implemented over NumPy and CuPy.

`import minimod as mx` gives the names MXNet scripts use: `mx.sym`, `mx.nd`, `mx.mod`, `mx.io`,
`mx.init`, `mx.optimizer`, `mx.metric`, `mx.kv`, `mx.callback`, `mx.model`, `mx.lr_scheduler`,
`mx.mon`, `mx.viz`, `mx.random`, `mx.operator`, `mx.recordio`, `mx.image`, `mx.test_utils`,
`mx.util`, `mx.runtime`, `mx.engine`, `mx.log`, `mx.contrib`, `mx.cpu`, `mx.gpu`, `mx.Context`,
`mx.MXNetError`; `mx.autograd` and `mx.gluon` import but are not implemented (minimod is the
symbolic stack).
"""
from __future__ import annotations

import importlib

from . import (
    attribute,
    base,
    context,
    name,
    ndarray,
    operator,  # registers the Custom op, which any loaded graph may hold
    random,
    symbol,
)
from .base import MXNetError
from .context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from .symbol.naming import AttrScope
from .util import (
    is_np_array,
    is_np_shape,
    np_array,
    np_shape,
    reset_np,
    set_np,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

__version__ = "1.9.1"
"""The MXNet API version minimod follows (user code compares `mx.__version__ >= "1.3.0"`)."""
__minimod_version__ = "0.1.0"

nd = ndarray
sym = symbol
rnd = random

# Later pipeline stages are imported on first use, so `import minimod` stays light.
_LAZY = {
    "executor": "executor", "testing": "test_utils", "test_utils": "test_utils", "io": "io",
    "initializer": "initializer",
    "init": "initializer", "optimizer": "optimizer", "lr_scheduler": "lr_scheduler",
    "metric": "metric", "callback": "callback", "model": "model", "kvstore": "kvstore",
    "kv": "kvstore", "module": "module", "mod": "module", "monitor": "monitor",
    "mon": "monitor", "visualization": "visualization", "viz": "visualization",
    "rnn": "rnn", "executor_manager": "executor_manager", "profiler": "profiler",
    "numerics": "numerics", "recordio": "recordio",
    "util": "util", "runtime": "runtime", "autograd": "autograd", "gluon": "gluon",
    "contrib": "contrib", "image": "image", "img": "image", "engine": "engine",
    "log": "log", "onnx": "onnx", "rtc": "rtc", "tools": "tools", "registry": "registry",
}


def __getattr__(attr: str):
    target = _LAZY.get(attr)
    if target is None:
        raise AttributeError("module 'minimod' has no attribute '%s'" % attr)
    module = importlib.import_module("." + target, __name__)
    globals()[attr] = module
    return module


__all__ = ["MXNetError", "Context", "cpu", "gpu", "cpu_pinned", "current_context", "num_gpus",
           "AttrScope", "name", "attribute", "nd", "ndarray", "sym", "symbol", "random", "rnd",
           "base", "context",
           "__version__", "use_np", "use_np_shape", "use_np_array", "is_np_shape",
           "is_np_array", "np_shape", "np_array", "set_np_shape", "set_np",
           "reset_np", "operator"] + sorted(_LAZY)
