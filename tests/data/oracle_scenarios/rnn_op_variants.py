"""The RNN operator's modes, each for 2 SGD steps on its flat parameters (outputs, state
outputs, input, state and parameter gradients): rnn_relu and rnn_tanh bidirectional with 2
layers, GRU from a given state, and a 2-layer bidirectional LSTM. Not here: use_sequence_length
and lstm_state_clip_*, which MXNet 1.9.1's CPU kernel ignores (docs/compatibility.md; minimod
runs them as cuDNN does, tests/ops/test_rnn_lengths.py)."""
import numpy as np

T, N, D, H = 4, 3, 5, 4


def _param_count(mode, layers, bidirectional, inputs=D, hidden=H):
    gates = {"rnn_relu": 1, "rnn_tanh": 1, "gru": 3, "lstm": 4}[mode]
    dirs = 2 if bidirectional else 1
    total = 0
    for layer in range(layers):
        width = inputs if layer == 0 else hidden * dirs
        total += dirs * gates * hidden * (width + hidden + 2)
    return total


CASES = [
    ("relu_bi", dict(mode="rnn_relu", num_layers=2, bidirectional=True)),
    ("tanh_bi", dict(mode="rnn_tanh", num_layers=2, bidirectional=True)),
    ("gru_state", dict(mode="gru", num_layers=1, bidirectional=False)),
    ("lstm_bi", dict(mode="lstm", num_layers=2, bidirectional=True)),
]


def run(mx):
    out = {}
    rng = np.random.RandomState(61)
    for tag, kw in CASES:
        dirs = 2 if kw["bidirectional"] else 1
        layers = kw["num_layers"]
        count = _param_count(kw["mode"], layers, kw["bidirectional"])
        inputs = {"data": rng.uniform(-1, 1, (T, N, D)),
                  "params": rng.uniform(-0.4, 0.4, (count,)),
                  "state": rng.uniform(-0.5, 0.5, (layers * dirs, N, H))}
        if kw["mode"] == "lstm":
            inputs["cell"] = rng.uniform(-0.5, 0.5, (layers * dirs, N, H))
        syms = {k: mx.sym.Variable(k) for k in inputs}
        call = [syms["data"], syms["params"], syms["state"]]
        if "cell" in syms:
            call.append(syms["cell"])
        net = mx.sym.RNN(*call, state_size=H, state_outputs=True, name="rnn", **kw)
        loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(net[0])) + mx.sym.sum(net[1]))
        group = mx.sym.Group([loss] + [mx.sym.BlockGrad(net[i]) for i in range(len(net))])
        args = {k: mx.nd.array(v.astype(np.float32)) for k, v in inputs.items()}
        grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
        exe = group.bind(mx.cpu(), args, args_grad=grads)
        for step in range(2):
            exe.forward(is_train=True)
            exe.backward()
            for i, o in enumerate(exe.outputs[1:]):
                out["%s/out%d_%d" % (tag, i, step)] = o.asnumpy()
            for k in sorted(grads):
                out["%s/g_%s_%d" % (tag, k, step)] = grads[k].asnumpy()
            args["params"][:] = args["params"] - 0.1 * grads["params"]
    return out
