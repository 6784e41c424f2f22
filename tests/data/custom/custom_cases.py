"""Custom operators (mx.operator) and a training run through them, written once and run
under both MXNet 1.9.1 (gen_custom_golden.py) and minimod (tests/test_operator.py)."""
import numpy as np


def define(mx):
    """Register the custom operators with `mx` (either engine); returns nothing."""

    class NumpySoftmax(mx.operator.CustomOp):
        """MXNet's classic example: a softmax loss head in NumPy."""

        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = np.exp(x - x.max(axis=1).reshape((x.shape[0], 1)))
            y /= y.sum(axis=1).reshape((x.shape[0], 1))
            self.assign(out_data[0], req[0], mx.nd.array(y))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            label = in_data[1].asnumpy().ravel().astype(int)
            y = out_data[0].asnumpy()
            y[np.arange(label.shape[0]), label] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y))
            self.assign(in_grad[1], req[1], 0)

    @mx.operator.register("np_softmax")
    class NumpySoftmaxProp(mx.operator.CustomOpProp):
        def __init__(self):
            super(NumpySoftmaxProp, self).__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def list_outputs(self):
            return ["output"]

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return NumpySoftmax()

    class ScaledTanh(mx.operator.CustomOp):
        """y = tanh(x * scale) and its square, with NDArray math. (No aux state: MXNet 1.9.1
        cannot bind a Custom op with one under Module, its storage-type inference fails.)"""

        def __init__(self, scale):
            self.scale = scale

        def forward(self, is_train, req, in_data, out_data, aux):
            y = mx.nd.tanh(in_data[0] * self.scale)
            self.assign(out_data[0], req[0], y)
            self.assign(out_data[1], req[1], y * y)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            dy = out_grad[0] + out_grad[1] * 2 * y
            self.assign(in_grad[0], req[0], dy * (1 - y * y) * self.scale)

    @mx.operator.register("scaled_tanh")
    class ScaledTanhProp(mx.operator.CustomOpProp):
        def __init__(self, scale="1.0"):
            super(ScaledTanhProp, self).__init__(need_top_grad=True)
            self.scale = float(scale)

        def list_outputs(self):
            return ["output", "square"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0], in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return ScaledTanh(self.scale)


def build(mx):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    act = mx.sym.Custom(fc1, op_type="scaled_tanh", scale=0.5, name="act")
    merged = act[0] + act[1]
    fc2 = mx.sym.FullyConnected(merged, num_hidden=3, name="fc2")
    return mx.sym.Custom(fc2, op_type="np_softmax", name="softmax")


def run(mx):
    """Three SGD-momentum steps of Module on a fixed batch; returns name -> array."""
    define(mx)
    rng = np.random.RandomState(0)
    x = rng.randn(8, 5).astype(np.float32)
    y = rng.randint(0, 3, size=8).astype(np.float32)
    sym = build(mx)
    mod = mx.mod.Module(sym, data_names=("data",), label_names=("softmax_label",))
    mod.bind(data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
    params = {"fc1_weight": rng.randn(6, 5) * 0.5, "fc1_bias": rng.randn(6) * 0.1,
              "fc2_weight": rng.randn(3, 6) * 0.5, "fc2_bias": rng.randn(3) * 0.1}
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    batch = mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)])
    out = {}
    for step in range(3):
        mod.forward_backward(batch)
        out["output%d" % step] = mod.get_outputs()[0].asnumpy()
        mod.update()
    args, aux = mod.get_params()
    out.update({"arg:" + k: v.asnumpy() for k, v in args.items()})
    out.update({"aux:" + k: v.asnumpy() for k, v in aux.items()})
    return out
