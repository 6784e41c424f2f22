"""`mx.contrib.amp`: automatic mixed precision (see amp.py)."""
from . import amp
from .amp import *  # noqa: F401,F403

__all__ = amp.__all__
