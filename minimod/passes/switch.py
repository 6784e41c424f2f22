"""The on/off setting of an optional plan rewrite (the fusion and layout passes)."""
from __future__ import annotations

import contextlib

__all__ = ["Switch"]


class Switch:
    """On unless turned off for a block: `with switch.set(False): ...` (the previous setting
    comes back after the block, however it ends)."""

    def __init__(self):
        self.enabled = True

    @contextlib.contextmanager
    def set(self, enabled: bool):
        old = self.enabled
        self.enabled = bool(enabled)
        try:
            yield
        finally:
            self.enabled = old
