"""`mx.contrib.amp`: automatic mixed precision (see amp.py for what minimod does and refuses).

`convert_symbol` / `convert_model` / `convert_bucketing_module` insert MXNet's float16 casts
into a float32 network; `init()` and the Gluon functions raise NotImplementedError saying
what to use instead.
"""
from . import amp, lists
from .amp import *  # noqa: F401,F403

__all__ = list(amp.__all__) + ["amp", "lists"]
