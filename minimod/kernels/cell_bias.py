"""An LSTM cell's recurrent bias added by the fused cell, for GPU plans
(`minimod.passes.cell_bias`): `ProductForCell` and `BiasedLSTMCell`.

`mx.rnn.LSTMCell` gives each step's hidden-to-hidden product a bias of its own
(FullyConnected h2h = h W^T + b), and the fused cell then adds the product to the input's
(`LSTMCellCombine`): a GEMM, a bias addition and the cell, three kernels a step. Here the
product node computes h W^T only and the cell adds the bias as it reads the product, two
kernels a step. The cell's kernel adds the bias to the product first, then the input's
product, as the two nodes did, so every value is the same bit for bit; the product's
gradients (the data's, the weight's and the bias's, the row sums of the product's gradient)
are FullyConnected's own, since its output as written still includes the bias.

The monitor sees the nodes as written: the product node reports h W^T + b (computed again
from its inputs when a monitor asks), and the cell its absorbed nodes with that product.
"""
from __future__ import annotations

from .. import backend
from ..backend import matmul
from ..ops.dense import FullyConnected
from .fused_cells import LSTM_CELL, LSTMCellCombine, _blocks, _cell_shapes, _kernel
from .registry import recast

__all__ = ["BiasedLSTMCell", "LSTM_CELL_BIASED", "ProductForCell"]


def _with_recurrent_bias(spec, gates: str):
    """`spec` reading the bias of the recurrent product too (b<gate> beside h<gate>), added to
    the product before the input's product is: `g = x + (h + b)`, the nodes' order."""
    body = spec.body
    for g in gates:
        old = "g%s = x%s + h%s;" % (g, g, g)
        assert old in body, old
        body = body.replace(old, "T p%s = h%s + b%s; g%s = x%s + p%s;" % ((g,) * 6))
    params = spec.in_params.replace("T c_prev", ", ".join("T b" + g for g in gates) +
                                    ", T c_prev")
    return backend.ElementwiseSpec(spec.name + "_biased", params, spec.out_params, body)


LSTM_CELL_BIASED = _with_recurrent_bias(LSTM_CELL, "ifco")


class ProductForCell(FullyConnected):
    """FullyConnected on 2-D data whose bias the fused cell reading it adds: forward writes
    data . weight^T only; backward, infer_shape and the attributes are FullyConnected's."""

    name = "FullyConnected(bias in cell)"
    plain: FullyConnected  # the op as written

    @classmethod
    def of(cls, fc: FullyConnected) -> "ProductForCell":
        """FullyConnected op `fc` (with a bias) as a product whose bias the cell adds."""
        op = recast(fc, cls)
        op.plain = fc
        return op

    def forward(self, xp, inputs, aux, out, is_train):
        matmul(xp, inputs[0], inputs[1].T, out=out[0])

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        written = matmul(xp, inputs[0], inputs[1].T) + inputs[2]
        return [(node_name, self.plain, list(inputs), [written])]


class BiasedLSTMCell(LSTMCellCombine):
    """`LSTMCellCombine` (`plain`, the op it stands for) reading the recurrent product's
    bias as a fourth input, (4H,), which it adds to the product (see the module docstring).
    Its gradient is the plain cell's: nothing flows to the bias through it."""

    name = "LSTMCell(fused, recurrent bias)"
    ARGUMENTS = LSTMCellCombine.ARGUMENTS + ("h2h_bias",)

    def __init__(self, plain: LSTMCellCombine):
        super().__init__(plain.absorbed)
        self.plain = plain

    def gradient_arguments(self) -> list:
        return self.plain.arguments()

    def infer_shape(self, in_shapes: list, out_shapes: list):
        _cell_shapes(self, in_shapes, out_shapes, 4, cells=(0, 1, 3), gates=2)
        wide = in_shapes[0] or in_shapes[1]
        if wide is not None:
            self.set_in(in_shapes, 3, (wide[1],))
        return in_shapes, out_shapes

    def forward(self, xp, inputs, aux, out, is_train):
        x, hh, c_prev, bias = inputs
        c, h, gates, tc = out
        hidden = c.shape[1]
        _kernel(self, xp, LSTM_CELL_BIASED)(*_blocks(x, hidden), *_blocks(hh, hidden),
                                            *(bias[k * hidden:(k + 1) * hidden]
                                              for k in range(4)),
                                            c_prev, *_blocks(gates, hidden), c, tc, h)

    def roles(self, xp, inputs: list) -> dict:
        x, hh, c_prev, bias = inputs
        return self.plain.roles(xp, [x, hh + bias, c_prev])
