"""The speed layer: everything that makes a step fast, beside the reference ops of
`minimod.ops`, each piece tested equal to the reference it replaces.

- bound fast paths (`fast_path`): closures over a step's planned arrays, registered against op
  classes and chosen once, at bind time, by the executor (`bind_forward`, `bind_backward`);
  dense.py, activation.py, loss.py, batchnorm.py, shifted_conv.py (stride-1 convolutions),
  lstm_host.py (the RNN op's LSTM steps on the host), add_n.py, joins.py (Concat and Stack
  on CuPy), pool_gpu.py (Pooling on CuPy: pool_max.py's
  and pool_overlap.py's kernels);
- raw CUDA kernels that check themselves on each GPU before they serve (checked_kernels.py:
  softmax_rows.py, pool_max.py, pool_overlap.py, embedding.py: Embedding's lookup, and its
  weight gradient summed in a fixed order, which take_rows.py binds for `take` too;
  batchnorm_gpu.py: BatchNorm, one kernel each way,
  bound through batchnorm.py);
- batch-last forms (layout.py, dense.py, activation.py, convolution.py, fused.py): op
  classes the layout pass puts in a plan's graph where data may stay (C, *spatial, N);
- fused ops (fused.py, fused_cells.py): op classes the fusion pass puts in place of a pattern
  of nodes; time_steps.py and reader_bias.py: the ops the GPU rewrites put in (the step
  stacking, the weight-gradient stacking, a bias added by the op reading the product);
- device variants (`variant_chooser`, cudnn.py): op classes the device pass swaps in where a
  device library serves the op (cuDNN on GPUs);
- fused GPU kernel bodies (`backend.ElementwiseSpec`, activation.py, fused_cells.py,
  reader_bias.py, add_n.py).

An op never asks which way it runs: the executor and the passes ask this package.
"""
from . import (  # noqa: F401
    activation,
    add_n,
    batchnorm,
    convolution,
    cudnn,
    dense,
    embedding,
    fused,
    fused_cells,
    joins,
    layout,
    loss,
    lstm_host,
    pool_gpu,
    shifted_conv,
    take_rows,
)
from .registry import (
    bind_backward,
    bind_forward,
    device_variant,
    fast_path,
    plain_numpy,
    recast,
    variant_chooser,
)

__all__ = ["fast_path", "bind_forward", "bind_backward", "device_variant", "variant_chooser",
           "recast", "plain_numpy"]
