"""An unrolled sequence's per-step work as one op, for GPU plans (the rewrites of
`minimod.passes.stack_steps`): `StepProjection` with `StepSplit` for the steps' input
products, `StepStack` with `TimeMajorConcat` for the join of the steps' outputs.

The input products. An RNN unrolled by `mx.rnn` splits its input sequence into time steps (a
SliceChannel with `squeeze_axis`) and gives each step's slice its own FullyConnected, every
one with the same weight and bias: the cell's input-to-hidden product (i2h). Unrolled over T
steps that is T small GEMMs and T bias additions forward, and backward T GEMMs for the data's
gradient, T for the weight's, T bias sums, and the sums of the T weight and bias gradients:
about 6T kernel launches for what is, over the whole sequence, one product. The pass replaces
the T nodes on GPUs by one `StepProjection` node and a `StepSplit` of its result along axis 0.

Its result is time-major, (T, N, num_hidden) whatever the data's layout, so that each step's
part is one contiguous block, which the memory plan gives the step as a view at no cost
(`Op.part_offsets`). For batch-major data (N, T, k) the node keeps a time-major copy of the
data as a hidden output, 'steps' (T, N, k): forward multiplies it as one (T*N, k) matrix,
and backward reads it for the weight's gradient, one GEMM over all T*N rows. The data's
gradient is one batched GEMM written through a strided view of the gradient.

Numbers: each output row is the same dot product of k terms as a step's own FullyConnected
computes, but the weight's and the bias's gradients add over all T*N rows in one reduction
instead of per step and then across steps, so they differ from the unstacked graph in the
last bits; CPUs keep the nodes and MXNet's numbers. A monitor sees each absorbed
FullyConnected by its name, with its data slice, weight, bias and output, and the data's
split where the pass removed it, all reported where the stacked node runs.

The join of the steps' outputs. `merge_outputs=True` joins the T step outputs, each with a
time axis of size 1, by a Concat along that axis, T copies each way. `StepStack` stacks them
along a new leading axis instead, which the memory plan assembles in place (each step's
output is written into its part by the node making it), and `TimeMajorConcat` moves the
time axis where the Concat had it, one copy each way, with the Concat's exact values.
"""
from __future__ import annotations

from ..backend import matmul, sum_into
from ..ops.dense import FullyConnected
from ..ops.join_split import SliceChannel, Stack
from ..ops.registry import Op
from .joins import bind_stack
from .registry import fast_path

__all__ = ["StepProjection", "StepSplit", "StepStack", "StepWeightGrad", "TimeMajorConcat"]


class StepProjection(Op):
    """FullyConnected over every time step of data (N, T, k) (`axis` 1) or (T, N, k)
    (`axis` 0): output (T, N, num_hidden), and for axis 1 the hidden time-major copy of the
    data. `fc` is the absorbed nodes' FullyConnected op (all alike) and `names` their node
    names, step by step; `split`, the (name, op) of the data's split where the pass removed
    it too, so that the monitor still sees it."""

    name = "FullyConnected(steps)"

    def __init__(self, fc: FullyConnected, axis: int, names: list, split=None):
        super().__init__({})
        self.fc, self.axis, self.names, self.split = fc, int(axis), list(names), split
        self.num_hidden, self.no_bias = fc.attrs.num_hidden, fc.attrs.no_bias
        # backward reads the weight and the data time-major: the input itself (axis 0), or
        # the hidden 'steps' copy (axis 1)
        self.backward_inputs = (0, 1) if self.axis == 0 else (1,)
        self.backward_outputs = () if self.axis == 0 else (1,)

    def arguments(self) -> list:
        return self.fc.arguments()

    def outputs(self) -> list:
        return ["output", "steps"] if self.axis == 1 else ["output"]

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        data = in_shapes[0]
        if data is None or len(data) != 3 or None in data:
            return in_shapes, out_shapes
        steps, batch = (data[1], data[0]) if self.axis == 1 else data[:2]
        self.set_in(in_shapes, 1, (self.num_hidden, data[2]), "num_hidden=%d" % self.num_hidden)
        if not self.no_bias:
            self.set_in(in_shapes, 2, (self.num_hidden,))
        self.set_out(out_shapes, 0, (steps, batch, self.num_hidden))
        if self.axis == 1:
            self.set_out(out_shapes, 1, (steps, batch, data[2]))
        return in_shapes, out_shapes

    def _time_major(self, inputs: list, outputs: list):
        """The data as (T, N, k), C-contiguous: the input itself, or the 'steps' copy."""
        return inputs[0] if self.axis == 0 else outputs[1]

    def forward(self, xp, inputs, aux, out, is_train):
        if self.axis == 1:
            xp.copyto(out[1], inputs[0].transpose(1, 0, 2))
        x = self._time_major(inputs, out)
        y = out[0]
        matmul(xp, x.reshape(-1, x.shape[2]), inputs[1].T, out=y.reshape(-1, self.num_hidden))
        if not self.no_bias:
            y += inputs[2]

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        g = out_grads[0]
        g2 = g.reshape(-1, self.num_hidden)
        dx, dw = in_grads[0], in_grads[1]
        if dx is not None:  # (T, N, k) = (T, N, H) @ (H, k), into dx as it lies
            matmul(xp, g, inputs[1], out=dx if self.axis == 0 else dx.transpose(1, 0, 2))
        if dw is not None:
            x = self._time_major(inputs, outputs)
            matmul(xp, g2.T, x.reshape(-1, x.shape[2]), out=dw)
        if not self.no_bias and in_grads[2] is not None:
            sum_into(xp, g2, 0, in_grads[2])

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        x, y = inputs[0], outputs[0]
        steps = [x[:, t] if self.axis == 1 else x[t] for t in range(len(self.names))]
        parts = [] if self.split is None else [(*self.split, [x], steps)]
        for t, name in enumerate(self.names):
            parts.append((name, self.fc, [steps[t]] + list(inputs[1:]), [y[t]]))
        return parts


class StepSplit(SliceChannel):
    """The split of a StepProjection's result into its T steps (axis 0, squeezed): a
    SliceChannel the user did not write, so the monitor reports nothing for it."""

    def __init__(self, steps: int):
        super().__init__({"num_outputs": str(steps), "axis": "0", "squeeze_axis": "True"})

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        return []


class StepStack(Stack):
    """The steps' outputs stacked time-major, (T,) + a step's shape: their join along the
    leading axis, which the memory plan assembles in place (each step's output is written
    into its part). A stack the user did not write: the monitor reports nothing for it."""

    def __init__(self, steps: int):
        super().__init__({"num_args": str(steps), "axis": "0"})

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        return []

    def gradient_reports(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        return []


# a StepStack the plan could not assemble in place runs as a Stack does on CuPy: per-input
# copies from nine inputs on, which a CUDA graph can hold (the registry matches exact classes)
fast_path(StepStack, stage="forward")(bind_stack)


class TimeMajorConcat(Op):
    """A Concat of T step outputs along axis `dim` (each of size 1 there) from their
    time-major stack (T,) + a step's shape: one transposing copy forward, one backward,
    where the Concat made T copies each way. `concat` is the Concat op it stands for, which
    the monitor reports with the steps as its inputs."""

    name = "Concat(time-major)"
    backward_inputs = ()
    backward_outputs = ()

    def __init__(self, concat, dim: int, step_shape: tuple):
        super().__init__({})
        self.concat, self.dim, self.step_shape = concat, int(dim), tuple(step_shape)

    def infer_shape(self, in_shapes: list, out_shapes: list):
        steps = len(self.concat.arguments())
        shape, d = self.step_shape, self.dim
        self.set_in(in_shapes, 0, (steps,) + shape)
        self.set_out(out_shapes, 0, shape[:d] + (steps,) + shape[d + 1:])
        return in_shapes, out_shapes

    def _time_major(self, stacked):
        """The stack as (T,) + the output's shape without its time axis."""
        shape = self.step_shape
        return stacked.reshape((stacked.shape[0],) + shape[:self.dim] + shape[self.dim + 1:])

    def _moved(self, xp, stacked):
        return xp.moveaxis(self._time_major(stacked), 0, self.dim)

    def forward(self, xp, inputs, aux, out, is_train):
        xp.copyto(out[0], self._moved(xp, inputs[0]))

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        if in_grads[0] is not None:
            xp.copyto(self._moved(xp, in_grads[0]), out_grads[0])

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        steps = [step.reshape(self.step_shape) for step in inputs[0]]
        return [(node_name, self.concat, steps, list(outputs))]


class StepWeightGrad(Op):
    """The gradients of the weight (and bias) that T FullyConnected nodes share, one node per
    step of an unrolled RNN (the cell's hidden-to-hidden product), from all the steps at once
    (`minimod.passes.stack_grads`): dW = sum over steps of dY_t^T X_t, db = the sum of every
    dY_t's rows.

    Input 0 is the steps' output gradients stacked, (T, N, num_hidden); the others are where
    the steps' data lie, each a run of steps: a stack of steps' data read from step `start`
    on for `count` steps, or one step's data (N, in_units) itself (start 0, count 1), as
    `runs` gives them, in the order of input 0's steps. Each run is one GEMM over its
    count*N rows, the first writing dW and the others adding to it, and the bias one sum:
    where the unrolled graph made T GEMMs, T bias sums and the two sums of T terms. The
    result adds in another order than the unstacked graph, so it differs in the last bits.
    `sum_names` are the gradient sums it stands for, which the monitor reports its outputs
    by."""

    name = "FullyConnected(step weights)"
    no_gradient = True

    def __init__(self, num_hidden: int, in_units: int, no_bias: bool, runs: list,
                 sum_names: list):
        super().__init__({})
        self.num_hidden, self.in_units, self.no_bias = int(num_hidden), int(in_units), no_bias
        self.runs, self.sum_names = [tuple(r) for r in runs], list(sum_names)

    def arguments(self) -> list:
        return ["out_grads"] + ["data%d" % i for i in range(len(self.runs))]

    def outputs(self) -> list:
        return ["weight_grad"] if self.no_bias else ["weight_grad", "bias_grad"]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        self.set_out(out_shapes, 0, (self.num_hidden, self.in_units))
        if not self.no_bias:
            self.set_out(out_shapes, 1, (self.num_hidden,))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        g = inputs[0]
        rows = g.shape[1]
        g2 = g.reshape(-1, self.num_hidden)
        done = 0
        for k, (x, (start, count)) in enumerate(zip(inputs[1:], self.runs)):
            x2 = x.reshape(-1, self.in_units)[start * rows:(start + count) * rows]
            matmul(xp, g2[done:done + count * rows].T, x2, out=out[0], accumulate=k > 0)
            done += count * rows
        if not self.no_bias:
            sum_into(xp, g2, 0, out[1])

    def gradient_reports(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        return [("%s_output0" % name, out) for name, out in zip(self.sum_names, outputs)]
