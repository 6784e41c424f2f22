"""The Executor: a compiled Plan bound to arrays on one device.

Compile (pure, `minimod.passes.compile_graph`) -> bind (allocate on one Context, binding.py)
-> run.

At bind time every entry of the plan gets its array: variables are the user's bound arrays,
planned entries are views into the blocks of a `MemoryPool`, and every op node becomes a
`Step` over fixed arrays (steps.py), so `forward`/`backward` are one plain loop (`_run`) with
no allocation of their own. The monitor and the NaN guard wrap the steps when they are on
(monitoring.py, `minimod.numerics`). Executors made with `shared_exec` (buckets, reshapes)
draw on the same pool; a pool that must grow replaces its blocks and every executor on it
re-derives its views and steps before its next run. A plan placed over several devices
(model parallelism, `group2ctx`) gives each entry its own device (placing.py). On a GPU,
each step list is captured once as a CUDA graph and replayed (graphs.py); `reshape` makes
its new executors in reshaping.py.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .. import backend
from .. import numerics as _numerics
from ..base import BindError, MXNetError, NonFiniteError, mxnet_error_from
from ..context import Context
from ..graph import graph_from_json, graph_to_json
from ..ndarray.ndarray import NDArray
from ..passes import Plan
from ..profiler import RECORDER, maybe_dump
from .graphs import StepGraphs
from .listing import plan_listing
from .monitoring import monitored
from .placing import context_of, grad_copies, head_grad_arrays, step_context
from .pool import MemoryPool
from .profiling import api_span, profiled
from .reshaping import reshaped
from .sparse_binding import SparseBindings
from .steps import Step, StepLists, bind_steps

__all__ = ["Executor", "assign"]


def assign(dst, req: str, src) -> None:
    """The one writer of user-bound gradient arrays: 'write' copies, 'add' accumulates."""
    if req == "write":
        dst[...] = src
    elif req == "add":
        dst += src


class Executor:
    """Runs one Plan on one Context. Attributes follow MXNet's Executor."""

    def __init__(self, symbol, plan: Plan, ctx: Context, arg_arrays: Sequence[NDArray],
                 grad_arrays: Sequence[Optional[NDArray]], aux_arrays: Sequence[NDArray],
                 pool: Optional[MemoryPool] = None):
        self._symbol = symbol
        self._plan = plan
        self._ctx = ctx
        self._xp = backend.xp_for(ctx)
        self.arg_arrays = list(arg_arrays)
        self.grad_arrays = list(grad_arrays)
        self.aux_arrays = list(aux_arrays)
        self._grad_req = dict(plan.grad_req)
        # row-sparse / CSR arrays the user bound run through dense twins (sparse_binding.py);
        # `_bound` is (arguments, gradients, aux states) as the steps read and write them
        self._sparse = SparseBindings.of(self.arg_arrays, self.grad_arrays, self.aux_arrays,
                                         self._grad_req, plan.arg_names)
        self._bound = ((self.arg_arrays, self.grad_arrays, self.aux_arrays)
                       if self._sparse is None else
                       (self._sparse.args, self._sparse.grads, self._sparse.aux))
        self._pool = pool if pool is not None else MemoryPool(ctx)
        self._placement = self._pool.place(plan.memory.block_bytes, plan.memory.block_devices)
        self._monitor: Optional[Callable] = None
        self._monitor_all = False
        self._forward_done = False  # see `backward`
        self._head_grads = head_grad_arrays(plan, ctx)
        self._graphs = StepGraphs(self._xp, ctx, plan.placement is not None)
        # made by `_materialize` from the pool's blocks, again whenever the pool grows
        self._generation = -1
        self._arrays: list = []  # the array of each entry id
        self._steps = StepLists((), (), ())
        self._watched: dict = {}  # (guard, profiling) -> the steps wrapped by them (and monitor)
        self.outputs: list = []
        # per device, [(user's gradient, req, planned gradient)]
        self._grad_copies: list = []
        self._materialize()
        self._arg_dict = self._grad_dict = self._aux_dict = None  # made on first use
        self._reshaped: dict = {}  # see `reshape`
        #: FlatParams holding (some of) this executor's parameters; see simple_bind
        self.flat_params: list = []

    # ------------------------------------------------------------------ binding
    def _materialize(self) -> None:
        """Give every entry its array and bind every node into a Step over them."""
        plan = self._plan
        arrays = self._arrays = self._entry_arrays()
        self._steps = bind_steps(plan, arrays, self._xp, self._ctx)
        self._watched = {}
        self.outputs = [NDArray(arrays[eid], context_of(plan, eid, self._ctx))
                        for eid in plan.output_eids]
        self._grad_copies = grad_copies(plan, self._bound[1], self._grad_req, arrays,
                                        self._ctx)
        self._generation = self._pool.generation
        self._graphs.reset()

    def _entry_arrays(self) -> list:
        """Per entry id: the user's bound array, a head gradient, or a view into the pool."""
        plan, pool = self._plan, self._pool
        arrays: list = [None] * plan.graph.num_entries
        args, grads, aux = self._bound
        for nd_arr, eid in zip(args, plan.arg_eids):
            arrays[eid] = nd_arr._data
        for nd_arr, eid in zip(aux, plan.aux_eids):
            arrays[eid] = nd_arr._data
        for i, eid in enumerate(plan.head_grad_eids):
            if eid is not None:
                arrays[eid] = self._head_grads[i]
        for name, grad in zip(plan.arg_names, grads):
            if name in plan.direct_grads:
                arrays[plan.grad_eids[name]] = grad._data
        for eid, sid in enumerate(plan.memory.storage):
            if sid >= 0 and arrays[eid] is None:
                arrays[eid] = pool.view(self._placement[sid], plan.shapes[eid],
                                        plan.dtypes[eid], plan.memory.offset(eid))
        return arrays

    def _check_pool(self) -> None:
        if self._generation != self._pool.generation:
            self._materialize()

    # ------------------------------------------------------------------ running
    def _step_lists(self) -> StepLists:
        """The steps to run: the bound ones, or, while a monitor is set, the NaN guard is on
        or the profiler records, the same steps wrapped by them (made once per setting)."""
        guard = _numerics.GUARD.enabled
        profile = RECORDER.on and RECORDER.symbolic
        if self._monitor is None and not guard and not profile:
            return self._steps
        key = (guard, profile)
        watched = self._watched.get(key)
        if watched is None:
            watched = self._watched[key] = self._steps.rewrapped(
                lambda step: self._watch(step, guard, profile))
        return watched

    def _watch(self, step: Step, guard: bool, profile: bool = False) -> Step:
        plan, ctx = self._plan, step_context(self._plan, step, self._ctx)
        inputs = None
        forward = self._steps.forward
        if forward and step.nid == forward[0].nid:  # the guard checks what forward reads
            inputs = (list(zip(plan.arg_names, self._bound[0]))
                      + list(zip(plan.aux_names, self._bound[2])))
        if self._monitor is not None:
            step = monitored(step, plan, ctx, self._monitor, self._monitor_all)
        if profile:
            step = profiled(step, ctx)
        return (_numerics.guarded(step, plan, backend.xp_for(ctx), ctx, inputs) if guard
                else step)

    def _run(self, kind: str, is_train: bool) -> None:
        """Run the step list `kind` ('forward', 'backward' or 'train'): as a CUDA graph
        once one is captured (graphs.py), else through `_run_steps`."""
        lists = self._step_lists()
        steps = getattr(lists, kind)
        if lists is self._steps and self._graphs.active:
            self._graphs.run((kind, is_train), lambda: self._run_steps(steps, is_train))
        else:
            self._run_steps(steps, is_train)
            if RECORDER.on:
                maybe_dump()

    def _run_steps(self, steps: tuple, is_train: bool) -> None:
        """Run `steps` in order: the one loop through which every op of a plan executes.
        An error is raised again naming the node, its op and the device."""
        xp = self._xp
        step = None
        try:
            with backend.device_scope(self._ctx):
                for step in steps:
                    run = step.run  # calling a local is quicker than calling an attribute
                    run(xp, is_train)
        except NonFiniteError:
            raise  # the NaN guard's reports name their node themselves
        except MXNetError as err:
            raise type(err)("%s: %s" % (self._where(step), err)) from err
        except Exception as err:
            raise mxnet_error_from(err, "%s: %s: %s" % (self._where(step), type(err).__name__,
                                                        err)) from err

    def _where(self, step: Optional[Step]) -> str:
        if step is None:
            return "before the first step on %s" % self._ctx
        return "while running %s (%s) on %s" % (step.node.name, step.node.op.name,
                                                 step_context(self._plan, step, self._ctx))

    def forward(self, is_train: bool = False, **kwargs) -> list:
        """Run the forward steps; keyword arrays are copied into the named arguments first."""
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise BindError("forward: '%s' is not an argument (arguments: %s)"
                                % (name, ", ".join(self._plan.arg_names)))
            dst = self.arg_dict[name]
            src = value._data if isinstance(value, NDArray) else value
            if tuple(np.shape(src)) != dst.shape:
                raise BindError("forward: '%s' has shape %s but the executor is bound with %s"
                                % (name, tuple(np.shape(src)), dst.shape))
            dst[:] = value
        self._check_pool()
        if self._sparse is not None:
            self._sparse.before_forward()
        with api_span("Executor.forward"):
            self._run("forward", bool(is_train))
        if self._sparse is not None:
            self._sparse.after_forward()
        self._pool.last_forward = self
        self._forward_done = True
        return self.outputs

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        """Run the backward steps with `out_grads` as the gradients of non-loss outputs."""
        if not self._forward_done:
            # MXNet runs backward on whatever its buffers hold; running the forward steps
            # first gives the same gradients wherever backward reads no forward value
            # (linear ops: `repeat`, `dot` ...) and defined ones where it does
            self.forward(is_train=True)
        if self._pool.last_forward is not self:
            raise MXNetError(
                "backward: another executor sharing this one's memory (a bucket or reshaped "
                "executor) ran forward since this executor's forward, so the values backward "
                "needs are gone; run forward on this executor again first")
        self._copy_head_grads(self._normalize_out_grads(out_grads))
        self._check_pool()
        if self._sparse is not None:
            self._sparse.before_backward()
        with api_span("Executor.backward"):
            self._run("backward", True)
        self._copy_grads()

    def _copy_head_grads(self, grads: list) -> None:
        plan = self._plan
        for i, eid in enumerate(plan.head_grad_eids):
            if eid is None:
                continue
            given = grads[i]
            if given is None:
                raise MXNetError(
                    "backward: output '%s' is not a loss, so its head gradient is required "
                    "(pass out_grads to backward)" % plan.output_names[i])
            src = given._data if isinstance(given, NDArray) else given
            if tuple(src.shape) != self._head_grads[i].shape:
                raise MXNetError("backward: out_grad for '%s' has shape %s, the output is %s"
                                 % (plan.output_names[i], tuple(src.shape),
                                    self._head_grads[i].shape))
            backend.copy_into(self._head_grads[i], src)

    def _copy_grads(self) -> None:
        """Gradients not written straight into the user's arrays: copied or added there
        (and those of sparse arrays the user bound, written into them)."""
        for ctx, copies in self._grad_copies:
            with backend.device_scope(ctx):
                for dst, req, src in copies:
                    assign(dst, req, src)
        if self._sparse is not None:
            self._sparse.after_backward()

    def forward_backward(self) -> None:
        """forward(is_train=True) then backward() for a net whose outputs are all losses (no
        head gradient to copy in): one run over both step lists, the training step's path.
        Nets with other outputs take forward and backward, which ask for their out_grads."""
        if self._head_grads:
            self.forward(is_train=True)
            self.backward()
            return
        self._check_pool()
        if self._sparse is not None:
            self._sparse.before_forward()
            self._sparse.before_backward()
        with api_span("Executor.forward_backward"):
            self._run("train", True)
        if self._sparse is not None:
            self._sparse.after_forward()
        self._pool.last_forward = self
        self._forward_done = True
        self._copy_grads()

    def _normalize_out_grads(self, out_grads) -> list:
        n = len(self._plan.output_eids)
        if out_grads is None:
            return [None] * n
        if isinstance(out_grads, dict):
            return [out_grads.get(name) for name in self._plan.output_names]
        if isinstance(out_grads, (NDArray, np.ndarray)) or hasattr(out_grads, "shape"):
            out_grads = [out_grads]
        out_grads = list(out_grads)
        # like MXNet, head gradient i belongs to output i and extra ones are not read (a
        # caller may pass one per output of a larger net); missing ones are checked by
        # `backward` for the outputs that need them
        return (out_grads + [None] * n)[:n]

    # ------------------------------------------------------------------ dicts
    def _named(self, names, arrays) -> dict:
        out = {}
        for name, arr in zip(names, arrays):
            if name in out:
                raise ValueError("duplicate name %s" % name)
            out[name] = arr
        return out

    @property
    def arg_dict(self) -> dict:
        if self._arg_dict is None:
            self._arg_dict = self._named(self._plan.arg_names, self.arg_arrays)
        return self._arg_dict

    @property
    def grad_dict(self) -> dict:
        if self._grad_dict is None:
            self._grad_dict = self._named(self._plan.arg_names, self.grad_arrays)
        return self._grad_dict

    @property
    def aux_dict(self) -> dict:
        if self._aux_dict is None:
            self._aux_dict = self._named(self._plan.aux_names, self.aux_arrays)
        return self._aux_dict

    @property
    def output_dict(self) -> dict:
        return self._named(self._plan.output_names, self.outputs)

    def get_optimized_symbol(self):
        """The forward graph this executor runs, as a new Symbol: the bound symbol after the
        rewrites that keep MXNet's operators (common-subexpression elimination, see
        `minimod.passes.cse`); minimod's device, fusion and layout rewrites are not shown."""
        # a copy through MXNet's JSON, as MXNet's is: the bound symbol's nodes stay its own;
        # built with the bound symbol's class, so the executor needs no symbol import
        text = graph_to_json(self._plan.symbol_graph)
        return type(self._symbol)(graph_from_json(text))

    # ------------------------------------------------------------------ parameters
    def copy_params_from(self, arg_params: Mapping, aux_params: Optional[Mapping] = None,
                         allow_extra_params: bool = False) -> None:
        for name, array in arg_params.items():
            if name in self.arg_dict:
                _copy_into(self.arg_dict[name], array, name)
            elif not allow_extra_params:
                raise ValueError('Find name "%s" that is not in the arguments' % name)
        for name, array in (aux_params or {}).items():
            if name in self.aux_dict:
                _copy_into(self.aux_dict[name], array, name)
            elif not allow_extra_params:
                raise ValueError('Find name "%s" that is not in the auxiliary states' % name)

    def set_monitor_callback(self, callback: Callable, monitor_all: bool = False) -> None:
        """Call `callback(name, NDArray)` for what each step computes, as MXNet's monitor
        does (`executor.monitoring`); None stops it."""
        self._monitor = callback
        self._monitor_all = monitor_all
        self._watched = {}

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs) -> "Executor":
        """A new executor for new input shapes, sharing arrays and the memory pool.

        As in MXNet, an argument, gradient or aux state whose shape stays is the same array;
        one that shrinks is a view of the first elements of the old one (writing either
        writes both); one that grows is a new array, allowed only with `allow_up_sizing`
        (making the largest executor first and shrinking is the cheap way). Shapes may change
        only for the arguments named in `kwargs`, unless `partial_shaping`. The new plan is
        compiled with this plan's options.

        Plans are compiled once per shape: asking again for shapes seen before (a module fed
        alternating batch sizes) returns the executor made the first time.
        """
        key = (partial_shaping, tuple(sorted((k, tuple(v)) for k, v in kwargs.items())))
        new = self._reshaped.get(key)
        if new is None:
            new = reshaped(self, partial_shaping, allow_up_sizing, **kwargs)
            if len(self._reshaped) >= 8:
                self._reshaped.pop(next(iter(self._reshaped)))
            self._reshaped[key] = new
        new.set_monitor_callback(self._monitor, self._monitor_all)  # kept, as in MXNet
        return new

    # ------------------------------------------------------------------ reports
    def debug_str(self) -> str:
        """The plan: the rewrites that ran, one line per step of the graph that runs, and,
        like MXNet's, `Total N MB allocated` third from the end (`listing.plan_listing`)."""
        return plan_listing(self._plan)

    def graph_status(self) -> dict:
        """How each step list runs on a GPU: as a replayed CUDA graph, or eagerly and why
        (keys are (step list, is_train); see executor/graphs.py)."""
        return self._graphs.status()


def _copy_into(dst: NDArray, src, name: str) -> None:
    data = src._data if isinstance(src, NDArray) else src
    if tuple(np.shape(data)) != dst.shape:
        raise BindError("parameter '%s' has shape %s but the executor needs %s"
                        % (name, tuple(np.shape(data)), dst.shape))
    backend.copy_into(dst._data, data)  # casts to dst's dtype, on dst's device
