"""How Module calls into an Optimizer subclass: which methods, with which index (an int, a
parameter name, or a list of them), one device and two. `run(mx)` trains a small MLP for two
batches under MXNet 1.9.1 or minimod and returns, per case, the calls made and the final
parameters (gen_subclass_calls.py writes MXNet's into subclass_calls.json)."""
import numpy as np

CASES = [("sgd_update", 1), ("sgd_update", 2), ("sgd_update_mp", 1), ("sgd_update_mp", 2),
         ("sgd_create_state", 1), ("adam_update", 1), ("adam_update", 2)]


def _describe(index):
    if isinstance(index, (list, tuple)):
        return [_describe(i) for i in index]
    return index if isinstance(index, str) else int(index)


def _classes(mx, log):
    class SGDUpdate(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            log.append(["update", _describe(index)])
            super().update(index, weight, grad, state)

    class SGDUpdateMP(mx.optimizer.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            log.append(["update_multi_precision", _describe(index)])
            super().update_multi_precision(index, weight, grad, state)

    class SGDCreateState(mx.optimizer.SGD):
        def create_state(self, index, weight):
            log.append(["create_state", _describe(index)])
            return super().create_state(index, weight)

    class AdamUpdate(mx.optimizer.Adam):
        def update(self, index, weight, grad, state):
            log.append(["update", _describe(index)])
            super().update(index, weight, grad, state)

    return {"sgd_update": SGDUpdate, "sgd_update_mp": SGDUpdateMP,
            "sgd_create_state": SGDCreateState, "adam_update": AdamUpdate}


def run(mx) -> dict:
    rng = np.random.RandomState(0)
    x, y = rng.randn(8, 5).astype("float32"), rng.randint(0, 3, 8).astype("float32")
    w1, b1 = rng.randn(4, 5).astype("float32") * 0.3, np.zeros(4, "float32")
    w2, b2 = rng.randn(3, 4).astype("float32") * 0.3, np.zeros(3, "float32")
    out = {}
    for name, ndev in CASES:
        log = []
        cls = _classes(mx, log)[name]
        data = mx.sym.var("data")
        net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
        net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="tanh"), num_hidden=3,
                                    name="fc2")
        net = mx.sym.SoftmaxOutput(net, name="softmax")
        mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
        mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
        mod.init_params(arg_params={k: mx.nd.array(v) for k, v in
                                    (("fc1_weight", w1), ("fc1_bias", b1),
                                     ("fc2_weight", w2), ("fc2_bias", b2))})
        opt = cls(learning_rate=0.1, rescale_grad=0.25, **(
            {"momentum": 0.9} if name.startswith("sgd") else {}))
        mod.init_optimizer(kvstore="local", optimizer=opt)
        for i in range(2):
            batch = mx.io.DataBatch([mx.nd.array(x[4 * i:4 * i + 4])],
                                    [mx.nd.array(y[4 * i:4 * i + 4])])
            mod.forward_backward(batch)
            mod.update()
        params = mod.get_params()[0]
        out["%s_%d" % (name, ndev)] = {
            "calls": log, "params": {k: v.asnumpy().tolist() for k, v in sorted(params.items())}}
    return out
