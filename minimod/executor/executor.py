"""The Executor: a compiled Plan bound to arrays on one device.

Compile (pure, `minimod.passes.compile_graph`) -> bind (allocate on one Context) -> run.

At bind time every entry of the plan gets its array: variables are the user's bound arrays,
planned entries are views into the blocks of a `MemoryPool`, and every step is resolved into a
closure over fixed arrays, so `forward`/`backward` are tight loops with no allocation of their
own. Executors made with `shared_exec` (buckets, reshapes) draw on the same pool; a pool that
must grow replaces its blocks and every executor on it re-derives its views before its next run.
"""
from __future__ import annotations

import os
import warnings
import weakref
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from .. import backend, kernels
from .. import numerics as _numerics
from ..base import BindError, MXNetError, mxnet_error_from
from ..context import Context
from ..ndarray.ndarray import NDArray
from ..passes import Plan, compile_graph, normalize_grad_req
from ..passes.memory import entry_nbytes
from .flat_params import flat_buffers

__all__ = ["Executor", "MemoryPool", "simple_bind", "bind", "assign"]


class MemoryPool:
    """Byte blocks on one device, shared by the executors of a bucketing or reshape family.

    Those executors take turns: each forward overwrites the others' activations, so only the
    executor that ran the last forward may run backward (checked; MXNet's buckets share memory
    the same way and BucketingModule always runs forward and backward back to back).
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.xp = backend.xp_for(ctx)
        self.blocks: list = []
        self.generation = 0
        # executors on one pool overwrite each other's activations: backward is only valid
        # for the executor that ran the last forward
        self.last_forward = None

    def place(self, sizes: Sequence[int]) -> list:
        """Pool block ids for a plan's blocks of `sizes` bytes, growing or adding blocks.

        Blocks are matched by size rank (the plan's largest to the pool's largest ...), so
        executors of different shapes (buckets) overlap as much as they can: the pool ends up
        holding, per rank, the largest block any of them needs. Blocks only ever grow, so a
        placement stays valid; a grown block is replaced (old views go stale) and the
        generation changes, telling every executor on the pool to re-derive its views.
        """
        ranked = sorted(range(len(self.blocks)), key=lambda b: (-self.blocks[b].nbytes, b))
        order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
        placement = [0] * len(sizes)
        changed = False
        with backend.device_scope(self.ctx):
            for rank, sid in enumerate(order):
                size = max(int(sizes[sid]), 1)
                if rank < len(ranked):
                    block = ranked[rank]
                    if self.blocks[block].nbytes < size:
                        self.blocks[block] = self.xp.empty(size, dtype=np.uint8)
                        changed = True
                else:
                    self.blocks.append(self.xp.empty(size, dtype=np.uint8))
                    block = len(self.blocks) - 1
                    changed = True
                placement[sid] = block
        if changed:
            self.generation += 1
        return placement

    @property
    def total_bytes(self) -> int:
        return int(sum(b.nbytes for b in self.blocks))

    def view(self, block: int, shape, dtype):
        nbytes = entry_nbytes(shape, dtype)
        return self.blocks[block][:nbytes].view(dtype).reshape(shape)


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
        self._pool = pool if pool is not None else MemoryPool(ctx)
        self._placement = self._pool.place(plan.memory.block_bytes)
        self._monitor: Optional[Callable] = None
        self._monitor_all = False
        self._forward_done = False  # see `backward`
        with backend.device_scope(ctx):
            self._head_grads = {
                i: self._xp.zeros(plan.shapes[eid], dtype=plan.dtypes[eid])
                for i, eid in enumerate(plan.head_grad_eids) if eid is not None}
        self._generation = -1
        self._materialize()
        self._arg_dict = self._grad_dict = self._aux_dict = None
        self._reshaped: dict = {}
        #: FlatParams holding (some of) this executor's parameters; see simple_bind
        self.flat_params: list = []

    # ------------------------------------------------------------------ binding
    def _materialize(self) -> None:
        """Give every entry its array and resolve every step into a closure."""
        plan, pool = self._plan, self._pool
        graph = plan.graph
        arrays: list = [None] * graph.num_entries
        for nd_arr, eid in zip(self.arg_arrays, plan.arg_eids):
            arrays[eid] = nd_arr._data
        for nd_arr, eid in zip(self.aux_arrays, plan.aux_eids):
            arrays[eid] = nd_arr._data
        for i, eid in enumerate(plan.head_grad_eids):
            if eid is not None:
                arrays[eid] = self._head_grads[i]
        for name, grad in zip(plan.arg_names, self.grad_arrays):
            if name in plan.direct_grads:
                arrays[plan.grad_eids[name]] = grad._data
        for eid, sid in enumerate(plan.memory.storage):
            if sid >= 0 and arrays[eid] is None:
                arrays[eid] = pool.view(self._placement[sid], plan.shapes[eid],
                                        plan.dtypes[eid])
        self._arrays = arrays
        steps = []
        for nid, node in enumerate(graph.nodes):
            if node.op is None:
                continue
            ins = [arrays[e] for e in graph.input_eids[nid]]
            outs = [arrays[e] for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1])]
            steps.append((nid, self._step_fn(self._xp, node.op, ins, outs)))
        self._fwd_steps = [s for s in steps if s[0] < plan.num_forward_nodes]
        self._bwd_steps = [s for s in steps if s[0] >= plan.num_forward_nodes]
        self._train_steps = self._fwd_steps + self._bwd_steps
        self.outputs = [NDArray(arrays[eid], self._ctx) for eid in plan.output_eids]
        self._grad_copies = [
            (grad._data, self._grad_req[name], arrays[plan.grad_eids[name]])
            for name, grad in zip(plan.arg_names, self.grad_arrays)
            if grad is not None and name in plan.grad_eids and name not in plan.direct_grads]
        self._generation = pool.generation

    @staticmethod
    def _step_fn(xp, op, ins: list, outs: list):
        """`fn(xp, is_train)` running one node on its planned arrays: the fast path that
        `minimod.kernels` binds for the op's class and these arrays when it has one, else the
        op's `forward` (for a gradient node, its forward op's `backward`). Chosen here, once
        per plan; the op is never asked which way to go."""
        if getattr(op, "is_backward", False):
            fwd = op.fwd_op
            arrays = op.split_arrays(ins, outs)
            fast = kernels.bind_backward(xp, fwd, *arrays)
            if fast is not None:
                return fast
            backward = fwd.backward
            out_grads, inputs, outputs, in_grads, aux = arrays

            def run_backward(xp, is_train):
                backward(xp, out_grads, inputs, outputs, in_grads, aux)
            return run_backward
        n_args = len(op.arguments())
        args, aux = ins[:n_args], ins[n_args:]
        fast = kernels.bind_forward(xp, op, args, aux, outs)
        if fast is not None:
            return fast
        forward = op.forward

        def run(xp, is_train):
            forward(xp, args, aux, outs, is_train)
        return run

    # ------------------------------------------------------------------ running
    def _run(self, steps, is_train: bool, guard: bool = True) -> None:
        if guard and _numerics.GUARD.enabled:  # opt-in NaN guard (minimod/numerics.py)
            _numerics.run_guarded(self, steps, is_train)  # calls back with guard=False
            return
        xp = self._xp
        nid = -1
        try:
            with backend.device_scope(self._ctx):
                if self._monitor is None:
                    for nid, fn in steps:
                        fn(xp, is_train)
                    return
                num_forward = self._plan.num_forward_nodes
                for nid, fn in steps:
                    # MXNet's monitor sees the forward nodes' outputs and, with monitor_all,
                    # their inputs first, as they were before the node ran (an in-place node
                    # overwrites its input); gradient nodes report their outputs
                    if nid < num_forward:
                        parts = self._monitored_nodes(nid)
                        if self._monitor_all:
                            self._report_inputs(*parts[0][:3], self._variable_names(nid))
                        fn(xp, is_train)
                        self._report_outputs(parts)
                    else:
                        fn(xp, is_train)
                        self._report_gradient_node(nid)
        except MXNetError as err:
            raise type(err)("%s: %s" % (self._where(nid), err)) from err
        except Exception as err:
            raise mxnet_error_from(err, "%s: %s: %s" % (self._where(nid), type(err).__name__,
                                                        err)) from err

    def _where(self, nid: int) -> str:
        if nid < 0:
            return "before the first step on %s" % self._ctx
        node = self._plan.graph.nodes[nid]
        return "while running %s (%s) on %s" % (node.name, node.op.name, self._ctx)

    def _monitored_nodes(self, nid: int) -> list:
        """(name, op, inputs, outputs) of the nodes the monitor sees in step `nid`: the node
        itself, or the nodes a fused op stands for (their arrays; the outputs are filled in
        once the step has run)."""
        graph = self._plan.graph
        node = graph.nodes[nid]
        ins = [self._arrays[e] for e in graph.input_eids[nid]]
        outs = [self._arrays[e] for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1])]
        as_written = getattr(node.op, "as_written", None)
        if as_written is not None:  # batch-last arrays, seen in MXNet's layout
            ins, outs = as_written(self._xp, ins, outs)
        unfused = getattr(node.op, "unfused_nodes", None)
        if unfused is None:
            return [(node.name, node.op, ins, outs)]
        return unfused(self._xp, node.name, ins, outs)

    def _report_outputs(self, parts: list) -> None:
        """Outputs of each monitored node, and the inputs of the ones after the first."""
        for k, (name, op, ins, outs) in enumerate(parts):
            if k and self._monitor_all:
                self._report_inputs(name, op, ins)
            outputs = op.outputs()[:op.num_json_outputs()]
            # like MXNet, hidden outputs are reported too (BatchNorm's bn_mean, bn_var), but
            # not an op's own reserve that MXNet does not count (the RNN op's)
            names = (["%s_output" % name] if len(outputs) == 1
                     else ["%s_%s" % (name, o) for o in outputs])
            for out_name, arr in zip(names, outs):
                self._monitor(out_name, NDArray(arr, self._ctx))

    def _report_gradient_node(self, nid: int) -> None:
        """The outputs of gradient node `nid` (`fc_backward`: the gradients of fc's
        arguments), named as MXNet names them: `fc_backward_output<i>` for argument i, or
        `act_backward_output` for an op of one argument. MXNet's gradient node computes every
        argument's gradient; minimod's only the ones asked for, so the others read as zeros
        (MXNet shows whatever its buffer held)."""
        graph = self._plan.graph
        node = graph.nodes[nid]
        op = node.op
        if not getattr(op, "is_backward", False):  # a fused gradient step: its own outputs
            names = ["%s_output%d" % (node.name, k)
                     for k in range(graph.row_ptr[nid + 1] - graph.row_ptr[nid])]
            for label, eid in zip(names, range(graph.row_ptr[nid], graph.row_ptr[nid + 1])):
                if self._arrays[eid] is not None:
                    self._monitor(label, NDArray(self._arrays[eid], self._ctx))
            return
        n_args = len(op.fwd_op.arguments())
        computed = dict(zip(op.wanted, range(graph.row_ptr[nid], graph.row_ptr[nid + 1])))
        inputs = self._forward_inputs(op.fwd_op)
        for i in range(n_args):
            label = "%s_output" % node.name if n_args == 1 else "%s_output%d" % (node.name, i)
            eid = computed.get(i)
            arr = self._arrays[eid] if eid is not None else None
            if arr is None:
                arr = self._xp.zeros(self._plan.shapes[inputs[i]], self._plan.dtypes[inputs[i]])
            self._monitor(label, NDArray(arr, self._ctx))

    def _forward_inputs(self, fwd_op) -> list:
        """The input entry ids of the forward node running `fwd_op`."""
        graph = self._plan.graph
        for nid in range(self._plan.num_forward_nodes):
            if graph.nodes[nid].op is fwd_op:
                return list(graph.input_eids[nid])
        raise MXNetError("no forward node runs %s" % fwd_op.name)

    def _variable_names(self, nid: int) -> list:
        """Per input of node `nid`: the name of the variable it is, or None."""
        graph = self._plan.graph
        nodes = [graph.nodes[graph.entry_node(e)] for e in graph.input_eids[nid]]
        return [node.name if node.is_variable else None for node in nodes]

    def _report_inputs(self, name: str, op, ins: list, variables=()) -> None:
        """Each input as MXNet reports it: "<node>_<input name>", after the variable's own
        name where the input is a variable (a weight is seen twice: `fc_weight` as the
        variable, then as fc's input "weight")."""
        variables = list(variables) + [None] * (len(ins) - len(variables))
        for slot, arr, variable in zip(op.monitor_input_names(), ins, variables):
            if variable is not None:
                self._monitor(variable, NDArray(arr, self._ctx))
            self._monitor("%s_%s" % (name, slot), NDArray(arr, self._ctx))

    def _check_pool(self) -> None:
        if self._generation != self._pool.generation:
            self._materialize()

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
        self._run(self._fwd_steps, bool(is_train))
        self._pool.last_forward = self
        self._forward_done = True
        return self.outputs

    def backward(self, out_grads=None, is_train: bool = True) -> None:
        """Run the backward steps with `out_grads` as the gradients of non-loss outputs."""
        plan = self._plan
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
        grads = self._normalize_out_grads(out_grads)
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
        self._check_pool()
        self._run(self._bwd_steps, True)
        if self._grad_copies:
            with backend.device_scope(self._ctx):
                for dst, req, src in self._grad_copies:
                    assign(dst, req, src)

    def forward_backward(self) -> None:
        """forward(is_train=True) then backward() for a net whose outputs are all losses (no
        head gradient to copy in): one run over both step lists, the training step's path.
        Nets with other outputs take forward and backward, which ask for their out_grads."""
        if self._head_grads:
            self.forward(is_train=True)
            self.backward()
            return
        self._check_pool()
        self._run(self._train_steps, True)
        self._pool.last_forward = self
        self._forward_done = True
        if self._grad_copies:
            with backend.device_scope(self._ctx):
                for dst, req, src in self._grad_copies:
                    assign(dst, req, src)

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
        from ..symbol.symbol import Symbol, load_json
        return load_json(Symbol(self._plan.symbol_graph.outputs).tojson())

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
        self._monitor = callback
        self._monitor_all = monitor_all

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs) -> "Executor":
        """A new executor for new input shapes, sharing arrays and the memory pool.

        As in MXNet, an argument, gradient or aux state whose shape stays is the same array;
        one that shrinks is a view of the first elements of the old one (writing either
        writes both); one that grows is a new array, allowed only with `allow_up_sizing`
        (making the largest executor first and shrinking is the cheap way). Shapes may change
        only for the arguments named in `kwargs`, unless `partial_shaping`.

        Plans are compiled once per shape: asking again for shapes seen before (a module fed
        alternating batch sizes) returns the executor made the first time.
        """
        key = (partial_shaping, tuple(sorted((k, tuple(v)) for k, v in kwargs.items())))
        new = self._reshaped.get(key)
        if new is None:
            new = self._reshape(partial_shaping, allow_up_sizing, **kwargs)
            if len(self._reshaped) >= 8:
                self._reshaped.pop(next(iter(self._reshaped)))
            self._reshaped[key] = new
        new.set_monitor_callback(self._monitor, self._monitor_all)  # kept, as in MXNet
        return new

    def _reshape(self, partial_shaping: bool, allow_up_sizing: bool, **kwargs) -> "Executor":
        plan = self._plan
        unknown = [k for k in kwargs if k not in plan.arg_names]
        if unknown:
            raise BindError("reshape: %s are not arguments (arguments: %s)"
                            % (unknown, ", ".join(plan.arg_names)))
        from ..passes import infer_graph_shapes
        fwd = self._symbol._graph
        inferred = infer_graph_shapes(fwd, {k: tuple(v) for k, v in kwargs.items()})
        new_arg_shapes = [inferred[fwd.row_ptr[i]] for i in fwd.argument_ids()]
        new_aux_shapes = [inferred[fwd.row_ptr[i]] for i in fwd.aux_ids()]

        def resized(name, arr, shape, what, free):
            """`arr` itself, a view of it, or a new array for `shape` (see `reshape`)."""
            if arr is None or shape is None or None in shape or tuple(shape) == arr.shape:
                return arr
            if not (free or partial_shaping):
                raise BindError(
                    "reshape: the shape of unspecified %s '%s' changed from %s to %s; pass "
                    "partial_shaping=True if this is intended" % (what, name, arr.shape,
                                                                  tuple(shape)))
            size = int(np.prod(shape, dtype=np.int64))
            if size <= arr.size:
                return NDArray(arr._data.reshape(-1)[:size].reshape(shape), self._ctx)
            if not allow_up_sizing:
                raise BindError(
                    "reshape: new shape %s of %s '%s' is larger than %s; making the largest "
                    "executor first and shrinking it is cheaper; pass allow_up_sizing=True to "
                    "allocate new arrays" % (tuple(shape), what, name, arr.shape))
            return _zeros_nd(tuple(shape), arr.dtype, self._ctx)

        args, grads = [], []
        for name, arr, grad, shape in zip(plan.arg_names, self.arg_arrays, self.grad_arrays,
                                          new_arg_shapes):
            args.append(resized(name, arr, shape, "argument", name in kwargs))
            grads.append(resized(name, grad, shape, "argument", name in kwargs))
        aux = [resized(name, arr, shape, "aux state", False)
               for name, arr, shape in zip(plan.aux_names, self.aux_arrays, new_aux_shapes)]
        shapes = {n: a.shape for n, a in zip(plan.arg_names + plan.aux_names, args + aux)}
        types = {n: a.dtype for n, a in zip(plan.arg_names + plan.aux_names, args + aux)}
        new_plan = compile_graph(fwd, shapes, types, plan.grad_req, ctx=self._ctx,
                                 common_expr=plan.common_expr_eliminated)
        new = Executor(self._symbol, new_plan, self._ctx, args, grads, aux, pool=self._pool)
        new.flat_params = self.flat_params
        return new

    # ------------------------------------------------------------------ reports
    def debug_str(self) -> str:
        """The plan, one line per step, ending like MXNet's with `Total N MB allocated`."""
        plan = self._plan
        graph = plan.graph
        storage = plan.memory.storage
        lines = ["Symbol outputs: %s" % ", ".join(plan.output_names)]
        for nid, node in enumerate(graph.nodes):
            if node.op is None:
                continue
            phase = "fwd" if nid < plan.num_forward_nodes else "bwd"
            ins = ", ".join("%s%s@%s" % (graph.entry_name(e), _shape_text(plan.shapes[e]),
                                         _sid_text(storage[e], e, plan))
                            for e in graph.input_eids[nid])
            outs = ", ".join("%s%s@%s" % (graph.entry_name(e), _shape_text(plan.shapes[e]),
                                          _sid_text(storage[e], e, plan))
                             for e in range(graph.row_ptr[nid], graph.row_ptr[nid + 1]))
            note = getattr(node.op, "layout_note", None)
            lines.append("[%s] %s (%s%s): %s -> %s" % (phase, node.name, node.op.name,
                                                      note() if note else "", ins, outs))
        planned = plan.memory.planned_bytes
        lines.append("Planned memory: %d bytes in %d blocks (%d in-place) vs %d bytes unplanned"
                     % (planned, len(plan.memory.block_bytes), plan.memory.inplace_hits,
                        plan.unplanned_bytes))
        lines.append("Total %d MB allocated" % (planned >> 20))
        lines.append("Total 0 TempSpace resource requested")
        return "\n".join(lines) + "\n"


def _shape_text(shape) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def _sid_text(sid: int, eid: int, plan: Plan) -> str:
    return "ext" if sid < 0 else "b%d" % sid


def _copy_into(dst: NDArray, src, name: str) -> None:
    data = src._data if isinstance(src, NDArray) else src
    if tuple(np.shape(data)) != dst.shape:
        raise BindError("parameter '%s' has shape %s but the executor needs %s"
                        % (name, tuple(np.shape(data)), dst.shape))
    backend.copy_into(dst._data, data)  # casts to dst's dtype, on dst's device


def _zeros_nd(shape, dtype, ctx) -> NDArray:
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        return NDArray(xp.zeros(shape, dtype=dtype), ctx)


# ---------------------------------------------------------------------------- binding


def simple_bind(symbol, ctx: Context, grad_req="write", type_dict=None, shared_arg_names=None,
                shared_exec: Optional[Executor] = None, shared_buffer: Optional[dict] = None,
                shapes: Optional[Mapping] = None, reuse_memory: bool = True) -> Executor:
    """Compile `symbol` for `shapes` and allocate its arrays on `ctx` (see Symbol.simple_bind).

    `reuse_memory=False` gives every entry its own block: the baseline of the plan-safety tests.
    """
    graph = symbol._graph
    arg_names = [graph.nodes[i].name for i in graph.argument_ids()]
    inputs = set(arg_names) | {graph.nodes[i].name for i in graph.aux_ids()}
    shapes = dict(shapes or {})
    unknown = [k for k in shapes if k not in inputs]
    if unknown:  # MXNet ignores them (force_rebind=True in its own tests, typos elsewhere)
        warnings.warn("simple_bind: ignoring %s, not among the symbol's arguments (%s)"
                      % (", ".join("'%s'" % k for k in unknown), ", ".join(arg_names)),
                      stacklevel=3)
        shapes = {k: v for k, v in shapes.items() if k in inputs}
    type_dict = {k: np.dtype(v) for k, v in (type_dict or {}).items() if k in inputs}
    reqs = normalize_grad_req(grad_req, arg_names)
    plan = compile_graph(graph, {k: tuple(v) for k, v in shapes.items()}, type_dict, reqs,
                         reuse_memory=reuse_memory, ctx=ctx, common_expr=common_expr_enabled())
    shared_names = set(shared_arg_names or ())
    shared_args = shared_exec.arg_dict if shared_exec is not None else {}
    shared_grads = shared_exec.grad_dict if shared_exec is not None else {}
    shared_aux = shared_exec.aux_dict if shared_exec is not None else {}
    pool = shared_exec._pool if shared_exec is not None else MemoryPool(ctx)
    # parameters (the shared names) allocated here live in one flat buffer per dtype
    fresh = [(name, plan.shapes[eid], plan.dtypes[eid]) for name, eid
             in zip(plan.arg_names, plan.arg_eids)
             if name in shared_names and reqs[name] != "null"
             and not (name in shared_args and _fits(shared_args[name], plan.shapes[eid],
                                                    plan.dtypes[eid]))]
    flats = flat_buffers(fresh, ctx)
    args, grads = [], []
    for name, eid in zip(plan.arg_names, plan.arg_eids):
        shape, dtype = plan.shapes[eid], plan.dtypes[eid]
        if name in flats:
            args.append(flats[name].weights[name])
            grads.append(flats[name].grads[name])
            continue
        if name in shared_names and name in shared_args and _fits(shared_args[name], shape,
                                                                   dtype):
            args.append(shared_args[name])
            grad = shared_grads.get(name)
            if reqs[name] != "null" and (grad is None or not _fits(grad, shape, dtype)):
                grad = _zeros_nd(shape, dtype, ctx)
            grads.append(grad if reqs[name] != "null" else None)
            continue
        if shared_buffer is not None and name not in shared_names:
            args.append(_from_buffer(shared_buffer, name, shape, dtype, ctx, pool))
        else:
            args.append(_zeros_nd(shape, dtype, ctx))
        grads.append(_zeros_nd(shape, dtype, ctx) if reqs[name] != "null" else None)
    aux = []
    for name, eid in zip(plan.aux_names, plan.aux_eids):
        shape, dtype = plan.shapes[eid], plan.dtypes[eid]
        if name in shared_aux and _fits(shared_aux[name], shape, dtype):
            aux.append(shared_aux[name])
        else:
            aux.append(_zeros_nd(shape, dtype, ctx))
    executor = Executor(symbol, plan, ctx, args, grads, aux, pool=pool)
    inherited = shared_exec.flat_params if shared_exec is not None else []
    executor.flat_params = list(dict.fromkeys(list(flats.values()) + list(inherited)))
    return executor


def _fits(arr: NDArray, shape, dtype) -> bool:
    return arr.shape == tuple(shape) and np.dtype(arr.dtype) == np.dtype(dtype)


# id(shared buffer array) -> weak references to the views handed out of it (NDArray compares
# elementwise, so it cannot key a WeakKeyDictionary)
_BUFFER_VIEWS: dict = {}


def _views_of(base: NDArray) -> list:
    views = _BUFFER_VIEWS.get(id(base))
    if views is None:
        views = _BUFFER_VIEWS[id(base)] = []
        weakref.finalize(base, _BUFFER_VIEWS.pop, id(base), None)
    return views


def _view_of(base: NDArray, shape, ctx) -> NDArray:
    size = int(np.prod(shape, dtype=np.int64))
    view = NDArray(base._data.reshape(-1)[:size].reshape(shape), ctx)
    _views_of(base).append(weakref.ref(view))
    return view


def _from_buffer(buffer: dict, name: str, shape, dtype, ctx,
                 pool: Optional[MemoryPool]) -> NDArray:
    """A view of the shared buffer's array for `name` (bucketing's input arrays).

    When a larger shape arrives, one larger array replaces the buffer and every view handed out
    before is moved onto it (the executors holding them re-derive their steps, through the
    pool's generation), so all buckets together hold one buffer per input, sized to the largest.
    """
    have = buffer.get(name)
    compatible = (have is not None and have.context == ctx
                  and np.dtype(have.dtype) == np.dtype(dtype))
    if compatible and have._data.nbytes >= entry_nbytes(shape, dtype):
        return _view_of(have, shape, ctx)
    base = _zeros_nd(shape, dtype, ctx)
    if compatible:
        for ref in _views_of(have):
            old = ref()
            if old is not None:
                old._data = base._data.reshape(-1)[:old.size].reshape(old.shape)
                _views_of(base).append(ref)
        _views_of(have).clear()
        if pool is not None:
            pool.generation += 1
    buffer[name] = base
    return _view_of(base, shape, ctx)


def common_expr_enabled() -> bool:
    """MXNet's switch for common-subexpression elimination at bind time: the environment
    variable MXNET_ELIMINATE_COMMON_EXPR, on unless "0" (read at each bind, as MXNet does)."""
    return os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1").strip() not in ("0", "false",
                                                                               "False")


def bind(symbol, ctx: Context, args, args_grad=None, grad_req="write", aux_states=None,
         shared_exec: Optional[Executor] = None) -> Executor:
    """Bind given arrays (lists in argument order or dicts by name) into an Executor.

    As in MXNet, a gradient array bound for an argument whose grad_req is 'null' stays in
    `grad_arrays` / `grad_dict` and is never written; a dtype of a bound array overrides the
    dtype a Variable declares.
    """
    graph = symbol._graph
    arg_names = [graph.nodes[i].name for i in graph.argument_ids()]
    aux_names = [graph.nodes[i].name for i in graph.aux_ids()]
    arg_list = _as_named_list(args, arg_names, "args", required=True)
    reqs = normalize_grad_req(grad_req, arg_names)
    if args_grad is None:
        grad_list = [None] * len(arg_names)
        reqs = {n: "null" for n in arg_names}
    else:
        grad_list = _as_named_list(args_grad, arg_names, "args_grad", required=False)
        for name, grad in zip(arg_names, grad_list):
            if grad is None:
                reqs[name] = "null"
    aux_list = _as_named_list(aux_states or ([] if not aux_names else None), aux_names,
                              "aux_states", required=True)
    arg_list = [_as_nd(a, ctx) for a in arg_list]
    aux_list = [_as_nd(a, ctx) for a in aux_list]
    shapes = {n: a.shape for n, a in zip(arg_names, arg_list)}
    shapes.update({n: a.shape for n, a in zip(aux_names, aux_list)})
    types = {n: np.dtype(a.dtype) for n, a in zip(arg_names, arg_list)}
    types.update({n: np.dtype(a.dtype) for n, a in zip(aux_names, aux_list)})
    plan = compile_graph(graph, shapes, types, reqs, ctx=ctx, common_expr=common_expr_enabled())
    for name, grad, eid in zip(arg_names, grad_list, plan.arg_eids):
        if grad is not None and reqs[name] != "null" and grad.shape != tuple(plan.shapes[eid]):
            raise BindError("bind: gradient array for '%s' has shape %s, the argument is %s"
                            % (name, grad.shape, plan.shapes[eid]))
    pool = shared_exec._pool if shared_exec is not None else None
    return Executor(symbol, plan, ctx, arg_list, grad_list, aux_list, pool=pool)


def _as_nd(value, ctx) -> NDArray:
    if isinstance(value, NDArray):
        return value
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        return NDArray(xp.asarray(value, dtype=np.float32), ctx)


def _as_named_list(values, names: list, what: str, required: bool) -> list:
    if values is None:
        if required and names:
            raise BindError("bind: %s is required for %s" % (what, ", ".join(names)))
        return [None] * len(names)
    if isinstance(values, dict):
        # MXNet reads the names it needs and ignores the rest; an array under a name the
        # symbol lacks is likely a mistake (a None placeholder, e.g. for an absent bias, not)
        unknown = [k for k, v in values.items() if k not in names and v is not None]
        if unknown:
            warnings.warn("bind: %s names %s, which the symbol does not have; ignored "
                          "(expected: %s)" % (what, unknown, ", ".join(names)), stacklevel=4)
        missing = [n for n in names if n not in values]
        if missing and required:
            raise BindError("bind: %s is missing %s" % (what, ", ".join(missing)))
        return [values.get(n) for n in names]
    values = list(values)
    if len(values) != len(names):
        raise BindError("bind: %s has %d arrays but the symbol has %d (%s)"
                        % (what, len(values), len(names), ", ".join(names)))
    return values
