"""`LSTMCellCombine`: the elementwise part of an LSTM cell as one op, for GPU plans.

`mx.rnn.LSTMCell` (and any symbol written the same way) combines its two matrix products
with eleven elementwise nodes per time step: i2h + h2h, a SliceChannel into the four gates,
three sigmoids and a tanh, f * c, i * g, their sum (the new cell state c'), tanh(c') and
o * tanh(c') (the new hidden state h'). Forward they are about fifteen GPU kernels, backward
about twenty five, each a launch of its own on tiny arrays: most of an unrolled LSTM's
kernels. The fusion pass (`minimod.passes.fuse`) replaces them by this op on GPUs: forward
is one kernel (`lstm_cell`), backward one (`lstm_cell_grad`).

The kernels compute what the nodes compute, in their order: the sum of the two products,
the sigmoid in the form of Activation's GPU kernel (tanh(x / 2) / 2 + 1/2), the products
and sums one rounding each, and the gradients in the order the nodes' backward kernels
form them. Evaluated statement by statement (the CPU's emulation of the kernels) they give
the nodes' numbers bit for bit; compiled for a GPU, NVRTC may fuse a product and a sum into
one instruction (one rounding instead of two), as it may in any kernel.

Outputs: the visible 'state' (c') and 'out' (h'), and the hidden 'gates' (the four
activated gates, side by side as the sum was) and 'tanh_state' (tanh(c')), which backward
reads with the previous cell state. The op has no NumPy path: the pass puts it in GPU plans
only.
"""
from __future__ import annotations

from .. import backend
from ..base import MXNetError
from ..ops.registry import Op

__all__ = ["LSTM_CELL", "LSTM_CELL_GRAD", "LSTMCellCombine"]

LSTM_CELL = backend.ElementwiseSpec(
    "lstm_cell", "T xi, T xf, T xc, T xo, T hi, T hf, T hc, T ho, T c_prev",
    "T gi, T gf, T gc, T go, T c, T tc, T h",
    "gi = xi + hi; gi = tanh(gi * (T)0.5) * (T)0.5 + (T)0.5;"
    "gf = xf + hf; gf = tanh(gf * (T)0.5) * (T)0.5 + (T)0.5;"
    "gc = xc + hc; gc = tanh(gc);"
    "go = xo + ho; go = tanh(go * (T)0.5) * (T)0.5 + (T)0.5;"
    "T mf = gf * c_prev; T mi = gi * gc; c = mf + mi;"
    "tc = tanh(c); h = go * tc;")
LSTM_CELL_GRAD = backend.ElementwiseSpec(
    "lstm_cell_grad", "T dh, T dc_out, T gi, T gf, T gc, T go, T tc, T c_prev",
    "T dxi, T dxf, T dxc, T dxo, T dhi, T dhf, T dhc, T dho, T dc_prev",
    "T d_o = dh * tc; T d_t = dh * go;"
    "T dc = ((T)1 - tc * tc) * d_t; dc = dc_out + dc;"
    "T d_f = dc * c_prev; T d_i = dc * gc; T d_c = dc * gi; dc_prev = dc * gf;"
    "dxi = ((T)1 - gi) * gi * d_i; dhi = dxi;"
    "dxf = ((T)1 - gf) * gf * d_f; dhf = dxf;"
    "dxc = ((T)1 - gc * gc) * d_c; dhc = dxc;"
    "dxo = ((T)1 - go) * go * d_o; dho = dxo;")

#: the roles of the arrays the absorbed nodes read and write (see `LSTMCellCombine.roles`)
ROLES = ("i2h", "h2h", "prev_c", "sum", "slice0", "slice1", "slice2", "slice3", "in_gate",
         "forget_gate", "candidate", "out_gate", "forget_c", "in_candidate", "state",
         "tanh_state", "out")


_ZEROS: dict = {}


def _zero(xp, dtype):
    """A shared read-only 0-d zero of `dtype` on the current device: the head gradient of an
    output nobody read (made once, so a captured step holds no fill for it)."""
    key = (xp, backend.current_device(xp), dtype.str)
    zero = _ZEROS.get(key)
    if zero is None:
        zero = _ZEROS[key] = backend.read_only(xp, xp.zeros((), dtype))
    return zero


def _blocks(a, hidden: int) -> list:
    """The four gate blocks (columns) of an (N, 4H) array, as views."""
    return [a[:, k * hidden:(k + 1) * hidden] for k in range(4)]


class LSTMCellCombine(Op):
    """The elementwise part of an LSTM cell (see the module docstring): inputs i2h, h2h
    (N, 4H) and prev_c (N, H); outputs state c' and out h' (N, H), and hidden gates (N, 4H)
    and tanh_state (N, H).

    `absorbed` lists the nodes it stands for, in graph order, as (name, op, input roles,
    output roles) with roles from ROLES, so the monitor can report them as written."""

    name = "LSTMCell(fused)"
    ARGUMENTS = ("i2h", "h2h", "prev_c")
    OUTPUTS = ("state", "out", "gates", "tanh_state")
    backward_inputs = (2,)
    backward_outputs = (2, 3)

    def __init__(self, absorbed: list):
        super().__init__({})
        self.absorbed = absorbed

    def num_visible_outputs(self) -> int:
        return 2

    def output_names(self, node_name: str) -> list:
        return ["%s_output" % node_name, "%s_out_output" % node_name]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        gates = in_shapes[0] or in_shapes[1]
        self.set_in(in_shapes, 0, gates)
        self.set_in(in_shapes, 1, gates)
        if gates is not None and gates[1] is not None:
            cell = (gates[0], gates[1] // 4)
            self.set_in(in_shapes, 2, cell)
            for k in (0, 1, 3):
                self.set_out(out_shapes, k, cell)
            self.set_out(out_shapes, 2, gates)
        return in_shapes, out_shapes

    def _kernel(self, xp, spec):
        kernel = backend.elementwise(xp, spec)
        if kernel is None:
            raise MXNetError("%s runs on a GPU only: the fusion pass puts it in GPU plans"
                             % self.name)
        return kernel

    def forward(self, xp, inputs, aux, out, is_train):
        x, hh, c_prev = inputs
        c, h, gates, tc = out
        hidden = c.shape[1]
        self._kernel(xp, LSTM_CELL)(*_blocks(x, hidden), *_blocks(hh, hidden), c_prev,
                                    *_blocks(gates, hidden), c, tc, h)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        c_prev, gates, tc = inputs[2], outputs[2], outputs[3]
        hidden = tc.shape[1]
        dc_out, dh = (_zero(xp, tc.dtype) if g is None else g for g in out_grads[:2])
        d_x, d_h, d_c = (g if g is not None else xp.empty(a.shape, a.dtype)
                         for g, a in zip(in_grads, (gates, gates, tc)))
        self._kernel(xp, LSTM_CELL_GRAD)(dh, dc_out, *_blocks(gates, hidden), tc, c_prev,
                                         *_blocks(d_x, hidden), *_blocks(d_h, hidden), d_c)

    def roles(self, xp, inputs: list) -> dict:
        """Every array an absorbed node reads or writes, by role, computed afresh from this
        op's inputs (which it never overwrites), so they hold the step's values whether read
        before or after the step runs."""
        x, hh, c_prev = inputs
        hidden = c_prev.shape[1]
        c, tc, h = (xp.empty_like(c_prev) for _ in range(3))
        gates = xp.empty_like(x)
        self.forward(xp, inputs, [], [c, h, gates, tc], True)
        total = xp.add(x, hh)
        acts = _blocks(gates, hidden)
        arrays = dict(zip(ROLES, (x, hh, c_prev, total, *_blocks(total, hidden), *acts)))
        arrays.update(forget_c=acts[1] * c_prev, in_candidate=acts[0] * acts[2], state=c,
                      tanh_state=tc, out=h)
        return arrays

    def unfused_nodes(self, xp, node_name: str, inputs, outputs) -> list:
        arrays = self.roles(xp, list(inputs))
        return [(name, op, [arrays[r] for r in ins], [arrays[r] for r in outs])
                for name, op, ins, outs in self.absorbed]
