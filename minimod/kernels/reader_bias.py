"""A product's bias added by the op reading its output, for GPU plans
(`minimod.passes.reader_bias`): `ProductWithoutBias` and `ConvolutionWithoutBias`, and the
readers `BiasedLSTMCell` and `BiasActivation`.

A FullyConnected on a GPU is a GEMM and a bias addition, and what reads it is often one
elementwise kernel already:
- `mx.rnn.LSTMCell` gives each step's hidden-to-hidden product a bias of its own, and the
  fused cell (`LSTMCellCombine`) then adds the product to the input's: a GEMM, a bias
  addition and the cell, three kernels a step;
- an MLP's layer is a FullyConnected and a relu, tanh or sigmoid Activation: three kernels;
  a convolution through cuDNN's frontend and its activation likewise.
Here the product node computes data . weight^T only (`ProductWithoutBias`), or the
convolution only (`ConvolutionWithoutBias`), and the reader adds the bias as it reads the
product: two kernels each. The reader adds the bias to the product first, then does what it
did, so every value is the one the nodes compute, bit for bit; only a relu of NaN differs:
0 here, as MXNet's relu (NaN > 0 is false) gives, NaN on the op's own GPU path. The
product's gradients (the data's, the weight's and the bias's, the sums of the product's
gradient) are its op's own, since its output as written still includes the bias, and
nothing flows to the bias through the reader.

The monitor sees the nodes as written: the product node reports its output with the bias
(computed again from its inputs when a monitor asks), and the reader its own nodes with
that output.
"""
from __future__ import annotations

from .. import backend
from ..backend import matmul
from ..ops.activation import Activation
from ..ops.dense import FullyConnected
from ..ops.helpers import bias_view
from . import activation as _activation
from .cudnn import CudnnConvolution, _tuning
from .fused_cells import LSTM_CELL, LSTMCellCombine, _blocks, _cell_shapes, _kernel
from .registry import fast_path, recast

__all__ = ["BIAS_ACTIVATIONS", "BiasActivation", "BiasedLSTMCell", "ConvolutionWithoutBias",
           "LSTM_CELL_BIASED", "ProductWithoutBias"]


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


class _StandsFor:
    """A form of an op class that a rewrite puts in place of an op as written: `of(op)`
    gives it, sharing the op's attributes and keeping `op` itself as `plain`, for the
    monitor."""

    @classmethod
    def of(cls, op):
        new = recast(op, cls)
        new.plain = op
        return new


class ProductWithoutBias(_StandsFor, FullyConnected):
    """FullyConnected on 2-D data whose bias the op reading it adds: forward writes
    data . weight^T only; backward, infer_shape and the attributes are FullyConnected's."""

    name = "FullyConnected(bias in reader)"
    plain: FullyConnected  # the op as written

    def forward(self, xp, inputs, aux, out, is_train):
        matmul(xp, inputs[0], inputs[1].T, out=out[0])

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        written = matmul(xp, inputs[0], inputs[1].T) + inputs[2]
        return [(node_name, self.plain, list(inputs), [written])]


class ConvolutionWithoutBias(_StandsFor, CudnnConvolution):
    """A cuDNN Convolution whose bias the op reading it adds: forward runs the convolution
    only (through cuDNN's frontend the bias is a separate addition, which this saves);
    backward, the attributes and the memory contract are CudnnConvolution's."""

    name = "Convolution(bias in reader)"
    plain: CudnnConvolution  # the op as written

    def forward(self, xp, inputs, aux, out, is_train):
        self.cudnn.conv_forward(inputs[0], inputs[1], None, out[0], self.pad, self.stride,
                                self.dilate, self.attrs.num_group, **_tuning(self.attrs))

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        written = [xp.empty_like(a) for a in outputs]
        self.plain.forward(xp, list(inputs), [], written, True)
        return [(node_name, self.plain, list(inputs), written)]


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


#: act_type -> the activation of x + b as one kernel, in the op's arithmetic (its GPU
#: forward: CuPy's tanh, the sigmoid kernel of `kernels.activation`, a maximum with 0)
BIAS_ACTIVATIONS = {
    "tanh": backend.ElementwiseSpec("bias_tanh", "T x, T b", "T y", "T s = x + b; y = tanh(s);"),
    "sigmoid": backend.ElementwiseSpec(
        "bias_sigmoid", "T x, T b", "T y",
        "T s = x + b; y = tanh(s * (T)0.5) * (T)0.5 + (T)0.5;"),
    "relu": backend.ElementwiseSpec("bias_relu", "T x, T b", "T y",
                                    "T s = x + b; y = max(s, (T)0);"),
}


class BiasActivation(_StandsFor, Activation):
    """An Activation (`plain`, the op it stands for; relu, tanh or sigmoid, whose gradient
    reads only the output) reading the bias of the FullyConnected or Convolution it follows
    as a second input, one value per unit or channel (axis 1), added before the activation.
    Its gradient is the plain Activation's (its bound GPU kernels too)."""

    name = "Activation(bias)"
    ARGUMENTS = ("data", "bias")

    plain: Activation  # the op as written

    def arguments(self) -> list:
        return list(self.ARGUMENTS)

    def gradient_arguments(self) -> list:
        return self.plain.arguments()

    def forward(self, xp, inputs, aux, out, is_train):
        x = inputs[0]
        _kernel(self, xp, BIAS_ACTIVATIONS[self.attrs.act_type])(
            x, bias_view(inputs[1], x.ndim), out[0])

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        x = inputs[0]
        return [(node_name, self.plain, [x + bias_view(inputs[1], x.ndim)], list(outputs))]


fast_path(BiasActivation, stage="backward")(_activation.bind_backward)
