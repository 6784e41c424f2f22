"""What the compiler is asked to do: the graph rewrites, in order, and the memory plan's settings.

`compile_graph` takes one frozen `CompileOptions` and nothing else decides what it does. A
rewrite is a `Rewrite` record: a pass that returns a new graph of ordinary op classes (or the
graph itself when it has nothing to change) and the facts about the graph that a change makes
stale. The five rewrites, in the order a bind runs them:

- `CSE`: common-subexpression elimination (`passes.cse`), MXNet's own bind-time rewrite;
- `DEVICE`: each op's variant for the target device (`passes.device`: cuDNN's on GPUs);
- `FUSE`: patterns of nodes replaced by one fused op (`passes.fuse`: one pattern on CPUs,
  another on GPUs);
- `STACK`: a sequence's per-step input products as one product (`passes.stack_steps`, GPUs);
- `BATCH_LAST`: edges between ops that work batch-last stored that way (`passes.layout`, CPUs).

A bind builds its options with `default_options()`, the one place that reads the settings a
user can change: the environment variable MXNET_ELIMINATE_COMMON_EXPR (MXNet's switch for
CSE, read at each bind as MXNet reads it) and the blocks `with fusion(False):`,
`with stacking(False):` and `with layouts(False):` (for comparing executors with and
without a rewrite, or debugging).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Callable, Optional

import numpy as np

from .cse import eliminate_common_expr
from .device import specialize
from .fuse import fuse
from .layout import batch_last
from .stack_steps import stack_steps

__all__ = ["Rewrite", "CompileOptions", "CSE", "DEVICE", "FUSE", "STACK", "BATCH_LAST",
           "REWRITES", "default_options", "fusion", "stacking", "layouts"]


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """One graph rewrite the compiler may run.

    `run(facts, ctx)` returns a new forward graph, or `facts.graph` itself when nothing
    applies; `facts` gives the graph and, inferred when first read, its `shapes` and `types`
    (`minimod.passes.compiler.Facts`). `stale` names the facts a new graph invalidates: the
    compiler infers them again, but only when something reads them next. `mxnet_ops` is True
    when the result still holds only MXNet's operators, so `get_optimized_symbol` may show it.
    `per_device` is True when what it does suits one device type only (cuDNN variants on
    GPUs, fusion's patterns, batch-last storage on CPUs): a plan placed over CPUs and GPUs together
    (`passes.placement`) leaves it out.
    """

    name: str
    run: Callable
    stale: tuple
    mxnet_ops: bool = False
    per_device: bool = False


def _run_cse(facts, ctx):
    return eliminate_common_expr(facts.graph)


def _run_device(facts, ctx):
    return specialize(facts.graph, facts.types, ctx)


def _run_fuse(facts, ctx):
    return fuse(facts.graph, facts.shapes, facts.types, ctx)


def _run_stack(facts, ctx):
    return stack_steps(facts.graph, facts.shapes, facts.types, ctx)


def _run_batch_last(facts, ctx):
    return batch_last(facts.graph, facts.shapes, ctx)


#: merged nodes leave the graph: every later entry id moves, so shapes and types are stale
CSE = Rewrite("cse", _run_cse, stale=("shapes", "types"), mxnet_ops=True)
#: the same entries, but a device variant may size its hidden outputs differently
DEVICE = Rewrite("device", _run_device, stale=("shapes",), per_device=True)
#: the absorbed nodes' entries leave the graph: entry ids move
FUSE = Rewrite("fuse", _run_fuse, stale=("shapes", "types"), per_device=True)
#: nodes leave and come: entry ids move
STACK = Rewrite("stack_steps", _run_stack, stale=("shapes", "types"), per_device=True)
#: the same entries, some of them batch-last now: their shapes are permuted
BATCH_LAST = Rewrite("batch_last", _run_batch_last, stale=("shapes",), per_device=True)

#: every rewrite, in the order a bind runs them
REWRITES = (CSE, DEVICE, FUSE, STACK, BATCH_LAST)


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    """Everything `compile_graph` is told besides the graph, its inputs and the device.

    `rewrites` run in the order given, on the forward graph; with `STACK` (`FUSE`) among
    them, the rewrites of the graph with its gradient nodes that come with it run after the
    gradient pass (`compiler._gradient_rewrites`). `inplace` lets an output take over a dying
    input's block where the op allows it; `reuse_memory=False` gives every entry its own
    block (the baseline of the plan-safety tests); `default_dtype` is the dtype of variables
    that nothing else types.
    """

    rewrites: tuple = REWRITES
    inplace: bool = True
    reuse_memory: bool = True
    default_dtype: Optional[np.dtype] = np.dtype(np.float32)

    def without(self, *names: str) -> "CompileOptions":
        """These options less the rewrites named."""
        return dataclasses.replace(
            self, rewrites=tuple(r for r in self.rewrites if r.name not in names))


# rewrite name -> on/off, changed only for the length of a `with fusion(...)` block and alike
_ENABLED = {FUSE.name: True, STACK.name: True, BATCH_LAST.name: True}


@contextlib.contextmanager
def _setting(enabled: bool, *names: str):
    old = {name: _ENABLED[name] for name in names}
    _ENABLED.update({name: bool(enabled) for name in names})
    try:
        yield
    finally:
        _ENABLED.update(old)


def fusion(enabled: bool):
    """`with fusion(False):` binds in the block keep every node as written (for comparing
    fused and unfused executors, or debugging): neither the fusion pass nor the step-stacking
    pass runs. The previous setting comes back after it."""
    return _setting(enabled, FUSE.name, STACK.name)


def stacking(enabled: bool):
    """`with stacking(False):` binds in the block keep each time step's input product as
    written (the step-stacking pass, `passes.stack_steps`); the previous setting comes back
    after it."""
    return _setting(enabled, STACK.name)


def layouts(enabled: bool):
    """`with layouts(False):` binds in the block keep every array in MXNet's layout; the
    previous setting comes back after it."""
    return _setting(enabled, BATCH_LAST.name)


def _common_expr_enabled() -> bool:
    """MXNet's switch for common-subexpression elimination at bind time: the environment
    variable MXNET_ELIMINATE_COMMON_EXPR, on unless "0"."""
    return os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1").strip() not in ("0", "false",
                                                                               "False")


def default_options(reuse_memory: bool = True) -> CompileOptions:
    """The options a bind compiles with now: every rewrite, less those switched off."""
    off = [name for name, on in _ENABLED.items() if not on]
    if not _common_expr_enabled():
        off.append(CSE.name)
    return CompileOptions(reuse_memory=reuse_memory).without(*off)
