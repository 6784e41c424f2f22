"""Python custom operators (mx.operator.CustomOp / CustomOpProp) inside a Module trained on two
devices: a scaled softsign with its own backward and a keyword parameter, a loss head with
need_top_grad=False and two outputs, and an op keeping a running mean in an aux state; 3 SGD
steps, outputs, input gradients, parameters and the aux state after them."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import batch, det_params, to_nd, train_steps  # noqa: E402

_REGISTERED = {}


def _register(mx):
    if mx.__name__ in _REGISTERED:
        return
    _REGISTERED[mx.__name__] = True

    class ScaledSoftsign(mx.operator.CustomOp):
        def __init__(self, scale):
            super().__init__()
            self.scale = scale

        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0]
            self.assign(out_data[0], req[0], self.scale * x / (1 + mx.nd.abs(x)))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            x = in_data[0]
            grad = self.scale / mx.nd.square(1 + mx.nd.abs(x))
            self.assign(in_grad[0], req[0], out_grad[0] * grad)

    @mx.operator.register("scaled_softsign")
    class ScaledSoftsignProp(mx.operator.CustomOpProp):
        def __init__(self, scale="1.0"):
            super().__init__(need_top_grad=True)
            self.scale = float(scale)

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return ScaledSoftsign(self.scale)

    class SquaredLoss(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            diff = in_data[0] - in_data[1]
            self.assign(out_data[0], req[0], in_data[0])
            self.assign(out_data[1], req[1], mx.nd.sum(diff * diff, axis=1))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], (in_data[0] - in_data[1]) / in_data[0].shape[0])
            self.assign(in_grad[1], req[1], mx.nd.zeros_like(in_data[1]))

    @mx.operator.register("squared_loss")
    class SquaredLossProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def list_outputs(self):
            return ["output", "per_sample"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0], [in_shape[0][0]]], []

        def create_operator(self, ctx, shapes, dtypes):
            return SquaredLoss()

    class RunningMean(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            if is_train:
                aux[0][:] = 0.9 * aux[0] + 0.1 * mx.nd.mean(in_data[0], axis=0)
            self.assign(out_data[0], req[0], in_data[0] - aux[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("running_mean")
    class RunningMeanProp(mx.operator.CustomOpProp):
        def list_auxiliary_states(self):
            return ["mean"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], [[in_shape[0][1]]]

        def create_operator(self, ctx, shapes, dtypes):
            return RunningMean()


def _net(mx):
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    h = mx.sym.Custom(h, op_type="scaled_softsign", scale=1.5, name="softsign")
    h = mx.sym.Custom(h, op_type="running_mean", name="center")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.Custom(h, mx.sym.Variable("label"), op_type="squared_loss", name="loss")


def run(mx):
    _register(mx)
    rng = np.random.RandomState(53)
    x = rng.uniform(-1, 1, size=(18, 5)).astype(np.float32)
    y = rng.uniform(-1, 1, size=(18, 3)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    args, auxs = det_params(sym, scale=0.5, data=(6, 5), label=(6, 3))
    mod = mx.mod.Module(sym, label_names=["label"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (6, 5))], label_shapes=[("label", (6, 3))],
             inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2,
                                                          "momentum": 0.5})
    return train_steps(mx, mod, [batch(mx, x, y, i, 6) for i in range(3)])
