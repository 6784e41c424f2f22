"""The deterministic initializers through Module.init_params: Mixed patterns, Constant,
One/Zero, Bilinear on a Deconvolution weight, LSTMBias on an LSTM cell's biases, the fused
cell's own FusedRNN attribute falling back on the initializer that called it, per-variable
`init=` attributes (which win over the module's initializer), Load with a default,
BatchNorm's gamma/beta/moving stats by name, and InitDesc attributes; then one training step
so the values are used."""
import numpy as np


def _net(mx):
    data = mx.sym.Variable("data")  # (N, 2, 4, 4)
    special = mx.sym.Variable("conv_weight", init=mx.init.Constant(0.05))
    conv = mx.sym.Convolution(data, weight=special, kernel=(3, 3), pad=(1, 1), num_filter=3,
                              name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=False, name="bn")
    up = mx.sym.Deconvolution(bn, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=3,
                              num_group=3, no_bias=True, name="up",
                              attr={"__init__": mx.init.Bilinear().dumps()})
    seq = mx.sym.Reshape(mx.sym.Pooling(up, kernel=(2, 2), stride=(2, 2), pool_type="avg"),
                         shape=(0, 3, -1))  # (N, 3, 16): 3 steps of 16
    lstm = mx.rnn.LSTMCell(5, prefix="lstm_", forget_bias=2.5)
    outs, _ = lstm.unroll(3, seq, layout="NTC", merge_outputs=False)
    fused = mx.rnn.FusedRNNCell(4, num_layers=1, mode="gru", prefix="gru_")
    gout, _ = fused.unroll(3, mx.sym.stack(*outs, axis=0), layout="TNC", merge_outputs=True)
    fc = mx.sym.FullyConnected(mx.sym.SequenceLast(gout), num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def run(mx):
    out = {}
    rng = np.random.RandomState(31)
    x = rng.uniform(-1, 1, size=(2, 2, 4, 4)).astype(np.float32)
    y = np.array([0, 2], np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    init = mx.init.Mixed(
        ["lstm_.*bias", "fc_weight", "fc_bias", ".*"],
        [mx.init.LSTMBias(forget_bias=2.5),
         mx.init.Load({"fc_weight": mx.nd.array(np.linspace(-0.3, 0.3, 12).reshape(3, 4))},
                      default_init=mx.init.One()),
         mx.init.Zero(),
         mx.init.Constant(0.1)])
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 2, 4, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(initializer=init)
    arg, aux = mod.get_params()
    for name in sorted(arg):
        out["init_" + name] = arg[name].asnumpy()
    for name in sorted(aux):
        out["aux_" + name] = aux[name].asnumpy()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    out["prob"] = mod.get_outputs()[0].asnumpy()
    mod.update()
    arg, _ = mod.get_params()
    for name in sorted(arg):
        out["p_" + name] = arg[name].asnumpy()
    desc = mx.init.InitDesc("w", attrs={"__init__": "[\"constant\", {\"value\": 3}]"})
    filled = mx.nd.zeros((2, 2))
    mx.init.Uniform(5)(desc, filled)  # the attribute's initializer wins
    out["desc"] = filled.asnumpy()
    return out
