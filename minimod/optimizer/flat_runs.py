"""The prepared updates of one run of a flat parameter buffer, for the optimizers whose update
a CUDA graph can hold: SGD (`SGDRun`) and Adam (`AdamRun`).

`minimod.flat.step` calls an optimizer's `_flat_step` once per run of parameters with equal
hyperparameters and then steps the run every update. The runs here split that step in two:

- `prepare(lr, wd)`, on the host every step: forms the kernel's scalars, and where they changed
  copies them into device memory (`DeviceScalars`, one small copy on the current stream);
- `launch()`: the kernels, over the flat arrays and those device scalars.

Under CuPy a run is `capturable`: its launches hold no number that changes between steps, so
the launches of a buffer's runs can be recorded once as a CUDA graph and replayed, and a new
learning rate (or Adam's bias correction, which moves every step) reaches the replays through
the device scalars. Eager steps launch the same kernels over the same device scalars, so a
replay and an eager step compute the same bits. Under NumPy the scalars stay numbers and the
arithmetic is the optimizer's own (`update_steps.py`), unchanged.
"""
from __future__ import annotations

import math

import numpy as np

from ..ndarray.update_steps import (
    DeviceScalars,
    sgd_block_views,
    sgd_fused,
    sgd_kernel,
    sgd_kernel_args,
    sgd_passes,
    sgd_scalars,
)
from ..ndarray.update_steps_adaptive import adam_passes, adam_scalars
from .base import _xp

__all__ = ["AdamRun", "SGDRun"]


class SGDRun:
    """SGD's update of one run: `run(lr, wd)` is `prepare(lr, wd)` then `launch()` (see the
    module docstring). The scalars are formed again only when one of their inputs changed.
    Without a device kernel (NumPy, or a gradient of another type) `launch` is the fused kernel
    with numbers where there is one, else the NumPy passes block by block, whose block views
    are made once."""

    __slots__ = ("opt", "w", "g", "mom", "xp", "ct", "inputs", "scalars", "device", "blocks",
                 "capturable")

    def __init__(self, opt, w, g, mom):
        self.opt, self.w, self.g, self.mom = opt, w, g, mom
        self.xp, self.ct = _xp(w), w.dtype.type
        self.inputs = self.scalars = None
        self.blocks: dict = {}  # scratch count -> block views
        kernel = self.xp is not np and sgd_kernel(self.xp, w, g, mom, False) is not None
        self.device = DeviceScalars(self.xp, w.dtype, 5) if kernel else None
        self.capturable = self.device is not None

    def __call__(self, lr: float, wd: float) -> None:
        self.prepare(lr, wd)
        self.launch()

    def prepare(self, lr: float, wd: float) -> bool:
        """Form the scalars for `lr` and `wd`; returns whether the update clips (which
        kernel `launch` runs)."""
        opt = self.opt
        inputs = (lr, wd, opt.momentum, opt.rescale_grad, opt.clip_gradient)
        if inputs != self.inputs:
            self.inputs, self.scalars = inputs, sgd_scalars(self.xp, self.ct, *inputs)
            if self.device is not None:
                self.device.write(sgd_kernel_args(self.ct, self.mom is not None,
                                                  self.scalars))
        return self.scalars[0]

    def launch(self) -> None:
        w, g, mom, scalars = self.w, self.g, self.mom, self.scalars
        args = None if self.device is None else self.device.arrays
        if sgd_fused(self.xp, w, g, mom, scalars, args):
            return
        scratches = 2 if scalars[5] is not None else 1  # a decay scratch with weight decay
        views = self.blocks.get(scratches)
        if views is None:
            views = self.blocks[scratches] = sgd_block_views(self.opt._scratch, w, g, mom,
                                                             scratches)
        sgd_passes(self.xp, w, mom, views, scalars)


class AdamRun:
    """Adam's update of one run: `prepare` folds the bias correction of the run's update
    count into the learning rate, as `Adam._step` does, so under CuPy its device scalars
    change every step (one small copy per run); `launch` is `adam_passes`, with scratch
    arrays of the run's own (a graph keeps their addresses, so they must outlive it)."""

    __slots__ = ("opt", "index", "arrays", "xp", "ct", "scalars", "device", "scratch",
                 "capturable")

    def __init__(self, opt, index, w, g, mean, var):
        self.opt, self.index, self.arrays = opt, index, (w, g, mean, var)
        self.xp, self.ct = _xp(w), w.dtype.type
        self.scalars = None
        self.scratch = (self.xp.empty_like(w), self.xp.empty_like(w))
        self.device = DeviceScalars(self.xp, w.dtype, 10) if self.xp is not np else None
        self.capturable = self.device is not None

    def __call__(self, lr: float, wd: float) -> None:
        self.prepare(lr, wd)
        self.launch()

    def prepare(self, lr: float, wd: float) -> bool:
        """Form the scalars for `lr` (before bias correction) and `wd`; returns whether the
        update clips."""
        opt = self.opt
        t = opt._index_update_count[self.index]
        lr *= math.sqrt(1.0 - opt.beta2 ** t) / (1.0 - opt.beta1 ** t)
        scalars = adam_scalars(self.ct, lr, wd, opt.beta1, opt.beta2, opt.epsilon,
                               opt.rescale_grad, opt.clip_gradient)
        if scalars != self.scalars:
            self.scalars = scalars
            if self.device is not None:
                self.device.write(scalars)
        return len(scalars) > 8

    def launch(self) -> None:
        scalars = self.scalars if self.device is None else self.device.arrays
        adam_passes(self.xp, *self.arrays, scalars, *self.scratch)
