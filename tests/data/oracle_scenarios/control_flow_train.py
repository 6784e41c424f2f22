"""mx.sym.contrib.foreach inside a trained graph (3 SGD-momentum steps; input, begin-state
and weight gradients): a tanh recurrence over the time axis with two outputs per step and
weights captured from outside the body, then a second loop over its reversed outputs whose
body owns a FullyConnected layer and carries two states (one a counter made in the graph).
Not here: while_loop and cond, which MXNet 1.9.1 builds but cannot bind (its shape inference
gives up on their subgraphs), so minimod refuses them symbolically."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd, train_steps  # noqa: E402

T, N, D, H = 4, 3, 5, 6


def _net(mx):
    data = mx.sym.Variable("data")  # (T, N, D)
    h0 = mx.sym.Variable("h0")  # (N, H)
    w_x = mx.sym.Variable("w_x")
    w_h = mx.sym.Variable("w_h")
    bias = mx.sym.Variable("b")

    def step(x, states):
        h = mx.sym.tanh(mx.sym.FullyConnected(x, weight=w_x, bias=bias, num_hidden=H)
                        + mx.sym.FullyConnected(states[0], weight=w_h, no_bias=True,
                                                num_hidden=H))
        return [h * 2, mx.sym.sum(h, axis=1)], [h]

    (seq, sums), last = mx.sym.contrib.foreach(step, data, [h0])  # (T, N, H), (T, N)
    last = last[0]

    def back_step(x, states):
        acc, count = states
        mixed = mx.sym.FullyConnected(x, num_hidden=H, name="back_fc") + acc * 0.5
        return mx.sym.relu(mixed), [mx.sym.relu(mixed), count + 1]

    rev = mx.sym.SequenceReverse(seq)
    back, (acc, count) = mx.sym.contrib.foreach(back_step, rev,
                                                [last, mx.sym.zeros((N, 1))])
    feat = mx.sym.concat(acc, mx.sym.transpose(sums), mx.sym.max(back, axis=0), count,
                         dim=1)  # (N, H + T + H + 1)
    fc = mx.sym.FullyConnected(feat, num_hidden=3, name="fc")
    return mx.sym.Group([mx.sym.SoftmaxOutput(fc, name="softmax"),
                         mx.sym.BlockGrad(back), mx.sym.BlockGrad(last)])


def run(mx):
    rng = np.random.RandomState(31)
    xs = rng.uniform(-1, 1, size=(3, T, N, D)).astype(np.float32)
    h0 = rng.uniform(-0.5, 0.5, size=(N, H)).astype(np.float32)
    ys = rng.randint(0, 3, size=(3, N)).astype(np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    shapes = dict(data=(T, N, D), h0=(N, H), softmax_label=(N,))
    args, auxs = det_params(sym, scale=0.4, **shapes)
    names = ["data", "h0"]
    mod = mx.mod.Module(sym, data_names=names, context=mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc("data", shapes["data"], layout="TNC"),
                          mx.io.DataDesc("h0", shapes["h0"], layout="NC")],
             label_shapes=[("softmax_label", (N,))], inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1,
                                                          "momentum": 0.9})
    batches = [mx.io.DataBatch([mx.nd.array(xs[i]), mx.nd.array(h0 * (i + 1))],
                               [mx.nd.array(ys[i])]) for i in range(3)]
    out = train_steps(mx, mod, batches, grads=("w_x", "w_h", "b", "fc_weight"))
    exe = mod._exec_group.execs[0]
    out["d_h0"] = exe.grad_dict["h0"].asnumpy()
    return out
