"""The elementwise part of an RNN cell as one op, for GPU plans: `LSTMCellCombine` and
`GRUCellCombine`.

`mx.rnn.LSTMCell` (and any symbol written the same way) combines its two matrix products
with eleven elementwise nodes per time step: i2h + h2h, a SliceChannel into the four gates,
three sigmoids and a tanh, f * c, i * g, their sum (the new cell state c'), tanh(c') and
o * tanh(c') (the new hidden state h'). `mx.rnn.GRUCell` uses fifteen: two SliceChannels into
three parts, the reset and update gates' sums and sigmoids, r * h2h_o, its sum with i2h_o
and the candidate's tanh, 1 - z, (1 - z) * candidate, z * h and their sum h'. Forward they
are about fifteen GPU kernels, backward about twenty five, each a launch of its own on tiny
arrays: most of an unrolled RNN's kernels. The fusion pass (`minimod.passes.fuse`) replaces
them by these ops on GPUs: forward is one kernel, backward one.

The kernels compute what the nodes compute, in their order: the sums of the two products,
the sigmoid in the form of Activation's GPU kernel (tanh(x / 2) / 2 + 1/2), the products
and sums one rounding each, and the gradients in the order the nodes' backward kernels
form them. Evaluated statement by statement (the CPU's emulation of the kernels) they give
the nodes' numbers bit for bit; compiled for a GPU, NVRTC may fuse a product and a sum into
one instruction (one rounding instead of two), as it may in any kernel.

LSTMCellCombine's outputs are the visible 'state' (c') and 'out' (h'), and the hidden
'gates' (the four activated gates, side by side as the sum was) and 'tanh_state'
(tanh(c')), which backward reads with the previous cell state. GRUCellCombine's are the
visible 'out' (h') and the hidden 'gates' (r, z and the candidate), which backward reads
with h2h and the previous hidden state. The ops have no NumPy path: the pass puts them in
GPU plans only.
"""
from __future__ import annotations

from .. import backend
from ..base import MXNetError
from ..ops.registry import Op

__all__ = ["GRU_CELL", "GRU_CELL_GRAD", "GRU_CELL_GRAD_SUMS", "GRUCellCombine", "LSTM_CELL",
           "LSTM_CELL_GRAD", "LSTM_CELL_GRAD_SUMS", "LSTMCellCombine", "MAX_TERMS",
           "SummedCellGrad"]

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

# Gate order r (reset), z (update), candidate; ho is h2h's candidate block
GRU_CELL = backend.ElementwiseSpec(
    "gru_cell", "T xr, T xz, T xo, T hr, T hz, T ho, T h_prev", "T gr, T gz, T gc, T h",
    "gr = xr + hr; gr = tanh(gr * (T)0.5) * (T)0.5 + (T)0.5;"
    "gz = xz + hz; gz = tanh(gz * (T)0.5) * (T)0.5 + (T)0.5;"
    "T mr = gr * ho; gc = xo + mr; gc = tanh(gc);"
    "T r = (T)1 - gz; T m1 = r * gc; T m2 = gz * h_prev; h = m1 + m2;")
GRU_CELL_GRAD = backend.ElementwiseSpec(
    "gru_cell_grad", "T dh, T gr, T gz, T gc, T ho, T h_prev",
    "T dxr, T dxz, T dxo, T dhr, T dhz, T dho, T dh_prev",
    "T r = (T)1 - gz; T d_r = dh * gc; T d_c = dh * r;"
    "T d_z = dh * h_prev; d_z = d_z - d_r; dh_prev = dh * gz;"
    "T d_o = ((T)1 - gc * gc) * d_c; dxo = d_o;"
    "T d_gr = d_o * ho; dho = d_o * gr;"
    "dxr = ((T)1 - gr) * gr * d_gr; dhr = dxr;"
    "dxz = ((T)1 - gz) * gz * d_z; dhz = dxz;")


def _summing_dh(spec, terms: int):
    """`spec` reading its output's gradient dh as `terms` addends dh0, dh1, ... (a gradient
    sum it absorbs, `SummedCellGrad`), added in the order and roundings of add_n's kernel,
    ((dh0 + dh1) + dh2) + ..."""
    names = ["dh%d" % k for k in range(terms)]
    body = "T dh = dh0 + dh1;" + "".join("dh = dh + %s;" % n for n in names[2:])
    return backend.ElementwiseSpec(
        "%s_sum%d" % (spec.name, terms),
        spec.in_params.replace("T dh,", ", ".join("T " + n for n in names) + ",", 1),
        spec.out_params, body + spec.body)


#: the most addends a cell's gradient kernel sums (a GRU's h' has three readers)
MAX_TERMS = 4
#: addends -> the cell's gradient kernel summing them first
LSTM_CELL_GRAD_SUMS = {k: _summing_dh(LSTM_CELL_GRAD, k) for k in range(2, MAX_TERMS + 1)}
GRU_CELL_GRAD_SUMS = {k: _summing_dh(GRU_CELL_GRAD, k) for k in range(2, MAX_TERMS + 1)}

#: the roles of the arrays the absorbed nodes read and write (see `LSTMCellCombine.roles`)
ROLES = ("i2h", "h2h", "prev_c", "sum", "slice0", "slice1", "slice2", "slice3", "in_gate",
         "forget_gate", "candidate", "out_gate", "forget_c", "in_candidate", "state",
         "tanh_state", "out")


def _kernel(op, xp, spec):
    kernel = backend.elementwise(xp, spec)
    if kernel is None:
        raise MXNetError("%s runs on a GPU only: the fusion pass puts it in GPU plans"
                         % op.name)
    return kernel


def _cell_shapes(op, in_shapes: list, out_shapes: list, count: int, cells: tuple,
                 gates: int):
    """Shapes of a cell op reading i2h and h2h (N, count * H) and a state (N, H): the
    outputs `cells` are (N, H), output `gates` is (N, count * H)."""
    wide = in_shapes[0] or in_shapes[1]
    op.set_in(in_shapes, 0, wide)
    op.set_in(in_shapes, 1, wide)
    if wide is not None and wide[1] is not None:
        cell = (wide[0], wide[1] // count)
        op.set_in(in_shapes, 2, cell)
        for k in cells:
            op.set_out(out_shapes, k, cell)
        op.set_out(out_shapes, gates, wide)
    return in_shapes, out_shapes


def _head_grads(out_grads: list, dtype) -> list:
    """The head gradients, a zero for each one nobody passed (an output nobody read)."""
    return [dtype.type(0) if g is None else g for g in out_grads]


def _grad_arrays(xp, in_grads: list, likes: tuple) -> list:
    """The input gradients, scratch shaped like `likes` where nobody asked for one (the
    kernel writes every gradient)."""
    return [xp.empty(a.shape, a.dtype) if g is None else g for g, a in zip(in_grads, likes)]


def _blocks(a, hidden: int, count: int = 4) -> list:
    """The `count` gate blocks (columns) of an (N, count * H) array, as views."""
    return [a[:, k * hidden:(k + 1) * hidden] for k in range(count)]


class _CellCombine(Op):
    """A fused cell: `absorbed` lists the nodes it stands for, in graph order, as (name, op,
    input roles, output roles), and `roles(xp, inputs)` gives each role's array, so the
    monitor can report the nodes as written."""

    def __init__(self, absorbed: list):
        super().__init__({})
        self.absorbed = absorbed

    def roles(self, xp, inputs: list) -> dict:
        raise NotImplementedError

    def unfused_nodes(self, xp, node_name: str, inputs, outputs) -> list:
        arrays = self.roles(xp, list(inputs))
        return [(name, op, [arrays[r] for r in ins], [arrays[r] for r in outs])
                for name, op, ins, outs in self.absorbed]


class LSTMCellCombine(_CellCombine):
    """The elementwise part of an LSTM cell (see the module docstring): inputs i2h, h2h
    (N, 4H) and prev_c (N, H); outputs state c' and out h' (N, H), and hidden gates (N, 4H)
    and tanh_state (N, H). Its absorbed nodes' roles are from ROLES."""

    name = "LSTMCell(fused)"
    ARGUMENTS = ("i2h", "h2h", "prev_c")
    OUTPUTS = ("state", "out", "gates", "tanh_state")
    backward_inputs = (2,)
    backward_outputs = (2, 3)

    def num_visible_outputs(self) -> int:
        return 2

    def output_names(self, node_name: str) -> list:
        return ["%s_output" % node_name, "%s_out_output" % node_name]

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return _cell_shapes(self, in_shapes, out_shapes, 4, cells=(0, 1, 3), gates=2)

    def forward(self, xp, inputs, aux, out, is_train):
        x, hh, c_prev = inputs
        c, h, gates, tc = out
        hidden = c.shape[1]
        _kernel(self, xp, LSTM_CELL)(*_blocks(x, hidden), *_blocks(hh, hidden), c_prev,
                                     *_blocks(gates, hidden), c, tc, h)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux, dh_more=()):
        """`dh_more`: more gradients of h', added to the first (`SummedCellGrad`)."""
        c_prev, gates, tc = inputs[2], outputs[2], outputs[3]
        hidden = tc.shape[1]
        dc_out, dh = _head_grads(out_grads[:2], tc.dtype)
        d_x, d_h, d_c = _grad_arrays(xp, in_grads, (gates, gates, tc))
        dhs = (dh,) + tuple(dh_more)
        spec = LSTM_CELL_GRAD_SUMS[len(dhs)] if dh_more else LSTM_CELL_GRAD
        _kernel(self, xp, spec)(*dhs, dc_out, *_blocks(gates, hidden), tc, c_prev,
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


#: the roles of the arrays GRUCellCombine's absorbed nodes read and write
GRU_ROLES = ("i2h", "h2h", "prev_h", "i2h_r", "i2h_z", "i2h_o", "h2h_r", "h2h_z", "h2h_o",
             "sum_r", "sum_z", "reset", "update", "reset_h2h_o", "sum_o", "candidate",
             "one_minus_update", "keep_candidate", "keep_h", "out")


class GRUCellCombine(_CellCombine):
    """The elementwise part of a GRU cell (see the module docstring): inputs i2h, h2h
    (N, 3H) and prev_h (N, H); outputs out h' (N, H) and the hidden gates (N, 3H): r, z and
    the candidate. Its absorbed nodes' roles are from GRU_ROLES."""

    name = "GRUCell(fused)"
    ARGUMENTS = ("i2h", "h2h", "prev_h")
    OUTPUTS = ("out", "gates")
    backward_inputs = (1, 2)
    backward_outputs = (1,)

    def num_visible_outputs(self) -> int:
        return 1

    def infer_shape(self, in_shapes: list, out_shapes: list):
        return _cell_shapes(self, in_shapes, out_shapes, 3, cells=(0,), gates=1)

    def forward(self, xp, inputs, aux, out, is_train):
        x, hh, h_prev = inputs
        h, gates = out
        hidden = h.shape[1]
        _kernel(self, xp, GRU_CELL)(*_blocks(x, hidden, 3), *_blocks(hh, hidden, 3), h_prev,
                                    *_blocks(gates, hidden, 3), h)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux, dh_more=()):
        """`dh_more`: more gradients of h', added to the first (`SummedCellGrad`)."""
        hh, h_prev, gates = inputs[1], inputs[2], outputs[1]
        hidden = h_prev.shape[1]
        (dh,) = _head_grads(out_grads[:1], h_prev.dtype)
        d_x, d_h, d_prev = _grad_arrays(xp, in_grads, (gates, gates, h_prev))
        gr, gz, gc = _blocks(gates, hidden, 3)
        dhs = (dh,) + tuple(dh_more)
        spec = GRU_CELL_GRAD_SUMS[len(dhs)] if dh_more else GRU_CELL_GRAD
        _kernel(self, xp, spec)(*dhs, gr, gz, gc, _blocks(hh, hidden, 3)[2], h_prev,
                                *_blocks(d_x, hidden, 3), *_blocks(d_h, hidden, 3), d_prev)

    def roles(self, xp, inputs: list) -> dict:
        """Every array an absorbed node reads or writes, by role, computed afresh from this
        op's inputs (see LSTMCellCombine.roles)."""
        x, hh, h_prev = inputs
        hidden = h_prev.shape[1]
        h, gates = xp.empty_like(h_prev), xp.empty_like(x)
        self.forward(xp, inputs, [], [h, gates], True)
        xs, hs, (reset, update, cand) = (_blocks(a, hidden, 3) for a in (x, hh, gates))
        reset_h2h_o = reset * hs[2]
        one_minus = 1 - update
        return dict(zip(GRU_ROLES, (
            x, hh, h_prev, *xs, *hs, xs[0] + hs[0], xs[1] + hs[1], reset, update, reset_h2h_o,
            xs[2] + reset_h2h_o, cand, one_minus, one_minus * cand, update * h_prev, h)))


class SummedCellGrad(Op):
    """A fused cell's gradient node that also adds up the gradients of the cell's output h'
    (`minimod.passes.fuse_grads`): h' read by the next step and by the sequence's output
    (and by the next GRU cell itself) made the gradient pass sum them with an add_n before
    the cell's gradient; here the cell's gradient kernel reads them all and adds them, one
    kernel where there were two.

    `backward` is the cell's gradient op (a BackwardOp) this node stands for: its inputs are
    that op's, the sum at position `head` replaced by its first addend, and then the
    `more` other addends; its outputs are that op's. `sum_name` names the add_n, and
    `arg_shapes` are the cell's argument shapes (the zeros of a gradient nobody asked for),
    so that the monitor sees both nodes as the gradient pass made them."""

    no_gradient = True

    def __init__(self, backward, head: int, more: int, sum_name: str, arg_shapes: list):
        super().__init__({})
        self.backward_op, self.head, self.more = backward, int(head), int(more)
        self.sum_name, self.arg_shapes = sum_name, [tuple(s) for s in arg_shapes]
        self.name = "%s+add_n" % backward.name

    def arguments(self) -> list:
        return self.backward_op.arguments() + ["head_grad_more%d" % k for k in range(self.more)]

    def outputs(self) -> list:
        return self.backward_op.outputs()

    def forward(self, xp, inputs, aux, out, is_train):
        bop = self.backward_op
        own = len(inputs) - self.more
        out_grads, fwd_in, fwd_out, in_grads, fwd_aux = bop.split_arrays(list(inputs[:own]),
                                                                         list(out))
        bop.fwd_op.backward(xp, out_grads, fwd_in, fwd_out, in_grads, fwd_aux,
                            dh_more=inputs[own:])

    def gradient_reports(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        bop = self.backward_op
        total = inputs[self.head]
        for addend in inputs[len(inputs) - self.more:]:
            total = total + addend
        reports = [("%s_output0" % self.sum_name, total)]
        computed = dict(zip(bop.wanted, outputs))
        dtype = outputs[0].dtype
        for i, shape in enumerate(self.arg_shapes):
            arr = computed.get(i)
            reports.append(("%s_output%d" % (node_name, i),
                            xp.zeros(shape, dtype) if arr is None else arr))
        return reports
