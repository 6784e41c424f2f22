"""Gradient compression: MXNet's '2bit' scheme with error feedback.

Every value pushed is added to a per-(key, device) residual; where the residual reaches
+threshold the pushed value becomes +threshold (and the residual drops by it), where it reaches
-threshold it becomes -threshold, elsewhere 0. What is not sent stays in the residual and is
sent later, so no gradient is lost, only delayed.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["TwoBitCompression", "create_compression"]


class TwoBitCompression:
    """Quantise to {-threshold, 0, +threshold} with error feedback."""

    type = "2bit"

    def __init__(self, threshold: float = 0.5):
        if threshold <= 0:
            raise ValueError("2bit compression needs a positive threshold, got %r" % threshold)
        self.threshold = float(threshold)
        self._residuals: dict = {}

    def compress(self, xp, key, device: int, grad):
        """The quantised version of `grad` (a new array); updates the residual in place."""
        residual = self._residuals.get((key, device))
        if residual is None or residual.shape != grad.shape:
            residual = xp.zeros_like(grad)
            self._residuals[(key, device)] = residual
        residual += grad
        t = self.threshold
        out = xp.zeros_like(grad)
        up = residual >= t
        down = residual <= -t
        out[up] = t
        out[down] = -t
        residual[up] -= t
        residual[down] += t
        return out


def create_compression(params: Mapping) -> TwoBitCompression:
    params = dict(params)
    kind = params.pop("type", None)
    if kind != "2bit":
        raise ValueError("unknown gradient compression type %r (supported: '2bit')" % (kind,))
    unknown = set(params) - {"threshold"}
    if unknown:
        raise ValueError("2bit compression takes only 'threshold', got %s" % sorted(unknown))
    return TwoBitCompression(float(params.get("threshold", 0.5)))
