"""The graph compiler: pure passes from a forward graph to an execution `Plan`.

- compiler.py: `compile_graph` (inference -> rewrites -> gradient -> memory plan), the `Plan`
  record it returns, `normalize_grad_req`;
- options.py: `CompileOptions`, the ordered rewrites (`CSE`, `DEVICE`, `FUSE`, `STACK`,
  `BATCH_LAST`), `default_options()` and the `fusion()` / `stacking()` / `layouts()` blocks
  that switch rewrites off;
- infer.py: shape and dtype inference; gradient.py: the gradient pass and `BackwardOp`;
  stack_grads.py, reader_bias.py and fuse_grads.py: on GPUs, the weight gradients of an
  unrolled RNN's steps as one product, a FullyConnected's bias added by the fused LSTM cell
  or the Activation reading it, and a fused cell's gradient summing its output's gradients
  itself;
  liveness.py and memory.py: the memory planner;
- the rewrites: cse.py, device.py, fuse.py, stack_steps.py, layout.py;
- placement.py: the placement pass of model-parallel binds (`group2ctx`), devices and copies.

Passes are pure functions of graphs and side tables indexed by entry id; nothing here
allocates an array.
"""
from .compiler import GRAD_REQS, Facts, Plan, compile_graph, normalize_grad_req
from .cse import eliminate_common_expr
from .device import specialize
from .fuse import fuse
from .gradient import BackwardOp, GradientGraph, build_gradient
from .infer import infer_graph_shapes, infer_graph_types
from .layout import batch_last
from .liveness import last_use
from .memory import MemoryPlan, plan_memory
from .options import (
    BATCH_LAST,
    CSE,
    DEVICE,
    FUSE,
    REWRITES,
    STACK,
    CompileOptions,
    Rewrite,
    default_options,
    fusion,
    layouts,
    stacking,
)
from .placement import Placement, placement_for
from .stack_steps import stack_steps

__all__ = ["Plan", "Facts", "compile_graph", "CompileOptions", "Rewrite", "CSE", "DEVICE",
           "FUSE", "STACK", "BATCH_LAST", "REWRITES", "default_options", "fusion", "stacking",
           "layouts", "stack_steps",
           "infer_graph_shapes", "infer_graph_types", "build_gradient", "last_use",
           "plan_memory", "MemoryPlan", "BackwardOp", "GradientGraph", "normalize_grad_req",
           "GRAD_REQS", "specialize", "fuse", "batch_last", "eliminate_common_expr",
           "Placement", "placement_for"]
