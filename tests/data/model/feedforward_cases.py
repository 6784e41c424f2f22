"""FeedForward runs written once and run under MXNet 1.9.1 (gen_feedforward_golden.py) and
minimod (tests/test_feedforward.py): fit on NumPy data (shuffled with np.random, rolled over),
with epoch_size, an eval set, then predict and score."""
import warnings

import numpy as np


def _data():
    rng = np.random.RandomState(0)
    x = rng.randn(46, 5).astype(np.float32)
    y = ((x[:, 0] + x[:, 1] > 0).astype(np.float32) + (x[:, 2] > 0.5)).astype(np.float32)
    params = {"fc1_weight": rng.randn(8, 5) * 0.3, "fc1_bias": rng.randn(8) * 0.1,
              "fc2_weight": rng.randn(3, 8) * 0.3, "fc2_bias": rng.randn(3) * 0.1}
    return x, y, params


def _net(mx):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def run(mx, epoch_size=None):
    x, y, params = _data()
    np.random.seed(5)  # NDArrayIter's shuffle draws from NumPy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mx.model.FeedForward(
            _net(mx), num_epoch=3, epoch_size=epoch_size, numpy_batch_size=8,
            arg_params={k: mx.nd.array(v) for k, v in params.items()},
            learning_rate=0.1, momentum=0.9, wd=0.01)
        model.fit(x, y, eval_data=(x[:10], y[:10]))
    out = {"arg:" + k: v.asnumpy() for k, v in model.arg_params.items()}
    out["predict"] = model.predict(x[:13])
    out["score"] = np.array([model.score(mx.io.NDArrayIter(x, y, 8), "acc")])
    return out
