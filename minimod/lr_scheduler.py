"""Learning-rate schedules (`mx.lr_scheduler`): the learning rate as a function of the update count.

An optimizer calls `scheduler(num_update)` with its `num_update`, the largest per-parameter update
count, which grows by one per batch however many devices there are. The formulas, the strict `>`
step tests and the log lines are MXNet 1.9.1's:

* warmup (every schedule): for `num_update < warmup_steps` the rate climbs linearly from
  `warmup_begin_lr` to `base_lr` ('linear') or stays at `warmup_begin_lr` ('constant').
* `FactorScheduler(step, factor)`: multiplies the rate by `factor` each time `num_update` passes
  another `step` updates, never going under `stop_factor_lr`.
* `MultiFactorScheduler(step=[s1, s2, ...], factor)`: multiplies by `factor` once `num_update`
  exceeds each listed step.
* `PolyScheduler(max_update, pwr)`: `final + (base - final) * (1 - t / T) ** pwr`.
* `CosineScheduler(max_update)`: `final + (base - final) * (1 + cos(pi * t / T)) / 2`,
  where t counts updates after warmup and T = max_update - warmup_steps; both keep their last rate
  after `max_update`.

Factor and multi-factor schedules keep state (they lower `base_lr` as they go), so, as in MXNet,
they expect `num_update` to be non-decreasing from call to call.
"""
from __future__ import annotations

import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: holds `base_lr` and the warmup settings; subclasses define `__call__`."""

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear") -> None:
        if not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {type(warmup_steps).__name__}")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if warmup_begin_lr > base_lr:
            raise ValueError(f"warmup_begin_lr ({warmup_begin_lr}) must not exceed base_lr "
                             f"({base_lr})")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError(f"warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The rate during warmup (`num_update < warmup_steps`)."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update {num_update} is past the {self.warmup_steps} "
                             "warmup steps")
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(num_update)")


class FactorScheduler(LRScheduler):
    """Multiply the rate by `factor` every `step` updates, not going below `stop_factor_lr`."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8,
                 base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"FactorScheduler step must be >= 1, got {step}")
        if factor > 1.0:
            raise ValueError(f"FactorScheduler factor must be <= 1 (the rate only decreases), "
                             f"got {factor}")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not "
                             "change in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update,
                             self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by `factor` once `num_update` exceeds each entry of `step`."""

    def __init__(self, step: list, factor: float = 1, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise TypeError(f"MultiFactorScheduler step must be a non-empty list, got {step!r}")
        for i, boundary in enumerate(step):
            if i and boundary <= step[i - 1]:
                raise ValueError(f"MultiFactorScheduler steps must increase, got {step}")
            if boundary < 1:
                raise ValueError(f"MultiFactorScheduler steps must be >= 1, got {step}")
        if factor > 1.0:
            raise ValueError(f"MultiFactorScheduler factor must be <= 1, got {factor}")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


def _check_max_update(name: str, max_update: int) -> None:
    if not isinstance(max_update, int):
        raise TypeError(f"{name} max_update must be an int, got {type(max_update).__name__}")
    if max_update < 1:
        raise ValueError(f"{name} max_update must be >= 1, got {max_update}")


class PolyScheduler(LRScheduler):
    """Polynomial decay from `base_lr` to `final_lr` over `max_update` updates (power `pwr`)."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2,
                 final_lr: float = 0, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update("PolyScheduler", max_update)
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            done = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = (self.final_lr
                            + (self.base_lr_orig - self.final_lr) * pow(1 - done, self.power))
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Half-cosine decay from `base_lr` to `final_lr` over `max_update` updates."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear") -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update("CosineScheduler", max_update)
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            angle = pi * (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = (self.final_lr
                            + (self.base_lr_orig - self.final_lr) * (1 + cos(angle)) / 2)
        return self.base_lr
