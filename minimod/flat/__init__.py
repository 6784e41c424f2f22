"""The fast path of `Module.update`: MXNet's per-parameter update, run over whole flat
parameter buffers, with the same numbers bit for bit.

Every executor keeps its trained parameters and their gradients in one flat buffer per dtype
(`minimod.executor.flat_params.FlatParams`, allocated by simple_bind). When the buffers are laid
out alike on every device, Module's update is, per buffer:

1. sum: the kvstore sums the buffer's gradients over the devices (and the workers) in one
   operation: `KVStore.allreduce`, or `KVStore.sum_into` the store's own flat copy of the
   weights when the store runs the optimizer;
2. step (step.py): the optimizer runs once per run of parameters with equal hyperparameters
   (usually the weights, then the biases) over views of the flat arrays, so every element sees
   the very operations and scalars of a per-parameter update;
3. when the store ran the optimizer, the new weights are copied back to every device.

    plan.py     UpdatePlan: which buffers an update works on, made once per bind or reshape
    update.py   update_params: the one call Module.update makes; the kvstore's flat copies
    step.py     the fused optimizer step over one buffer (on a GPU, replayed as a CUDA graph),
                and the flat optimizer states

Who holds what: the executors hold the buffers, Module the plan, the kvstore its flat copies
(`KVStore.flat_copies`), the Updater the flat optimizer states (`Updater.flat_states`) and the
say on which optimizers the fused step serves exactly (`Updater.flat_capable`).
"""
from .plan import NO_PLAN, DeviceBuffer, SharedBuffer, UpdatePlan, plan_update
from .step import update_graph_status
from .update import update_params

__all__ = ["NO_PLAN", "DeviceBuffer", "SharedBuffer", "UpdatePlan", "plan_update",
           "update_graph_status", "update_params"]
