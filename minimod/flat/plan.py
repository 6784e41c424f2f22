"""`UpdatePlan`: the flat buffers one update of an executor group works on, made once per bind
or reshape by `plan_update`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..executor.flat_params import FlatParams
from ..ndarray.ndarray import NDArray

__all__ = ["DeviceBuffer", "NO_PLAN", "SharedBuffer", "UpdatePlan", "plan_update"]


# eq=False: records compare (and hash) by identity; their fields hold arrays


@dataclass(frozen=True, eq=False)
class SharedBuffer:
    """A flat buffer laid out alike on every device: what the kvstore sums in one operation."""

    names: tuple[str, ...]            # its parameters in buffer order: the kvstore's keys
    copies: tuple[FlatParams, ...]    # the buffer on each device, in device order
    grads: tuple[NDArray, ...]        # their whole gradient arrays, as NDArrays


@dataclass(frozen=True, eq=False)
class DeviceBuffer:
    """One device's copy of a buffer, and the Updater's keys of its parameters there
    (`index * num_device + device`, as `_update_params` keys them)."""

    flat: FlatParams
    keys: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class UpdatePlan:
    """What one flat update of an executor group works on."""

    param_arrays: list | None              # the group's list this plan was made for
    buffers: tuple[SharedBuffer, ...]      # none when the flat update does not apply
    device_buffers: tuple[DeviceBuffer, ...]  # device by device, what the optimizer steps
    float16: bool                          # whether a buffer holds float16 weights


NO_PLAN = UpdatePlan(None, (), (), False)


def plan_update(group) -> UpdatePlan:
    """The plan of `group` (a DataParallelExecutorGroup): its flat buffers when every trained
    parameter on every device is a view of one and the buffers are laid out alike on all
    devices, else none (Module then updates parameter by parameter).

    A bind or reshape gives the group a new `param_arrays` list: a plan whose `param_arrays`
    is not the group's is out of date.
    """
    unplanned = UpdatePlan(group.param_arrays, (), (), False)
    if group.grad_arrays is None:  # bound for inference
        return unplanned
    index = {name: i for i, name in enumerate(group.param_names)}
    trained = {i for i, grads in enumerate(group.grad_arrays) if grads[0] is not None}
    per_device = []
    for device in range(len(group.execs)):
        flats = _views_of_group(group, index, device)
        if {index[name] for flat in flats for name in flat.names} != trained:
            return unplanned
        per_device.append(flats)
    if len({tuple(tuple(flat.names) for flat in flats) for flats in per_device}) != 1:
        return unplanned
    num_device = len(per_device)
    buffers = tuple(SharedBuffer(tuple(copies[0].names), tuple(copies),
                                 tuple(NDArray(flat.grad, flat.ctx) for flat in copies))
                    for copies in zip(*per_device))
    device_buffers = tuple(
        DeviceBuffer(flat, tuple(index[name] * num_device + device for name in flat.names))
        for device, flats in enumerate(per_device) for flat in flats)
    float16 = any(buffer.copies[0].dtype == np.float16 for buffer in buffers)
    return UpdatePlan(group.param_arrays, buffers, device_buffers, float16)


def _views_of_group(group, index: dict, device: int) -> list:
    """The flat buffers of `device`'s executor whose every parameter is the group's own
    parameter and gradient array there (not so for a buffer some of whose parameters the
    group took from elsewhere, such as a shared module with other shapes)."""
    params, grads = group.param_arrays, group.grad_arrays
    return [flat for flat in group.execs[device].flat_params
            if all(name in index and flat.covers(name, params[index[name]][device],
                                                 grads[index[name]][device])
                   for name in flat.names)]
