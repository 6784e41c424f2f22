"""mx.rnn cells beyond the plain LSTM stack, trained with Adam for 3 steps in one graph: a
bidirectional GRU (NTC, outputs merged), a residual LSTM over it from given begin states,
SequenceMask with lengths, a 2-layer GRU RNN operator from a given state (a TNC input of the
batch, bound with DataDesc's layout) and SequenceLast; input and state gradients each step."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd  # noqa: E402

T, N, D, H = 5, 3, 4, 6


def _net(mx):
    data = mx.sym.Variable("data")  # (N, T, D)
    lengths = mx.sym.Variable("lengths")
    bi = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(H, prefix="gl_"),
                                  mx.rnn.GRUCell(H, prefix="gr_"), output_prefix="bi_")
    seq, _ = bi.unroll(T, data, layout="NTC", merge_outputs=True)  # (N, T, 2H)
    res = mx.rnn.ResidualCell(mx.rnn.LSTMCell(2 * H, prefix="rl_"))
    begin = [mx.sym.Variable("h0"), mx.sym.Variable("c0")]
    seq2, states = res.unroll(T, seq, begin_state=begin, layout="NTC", merge_outputs=True)
    tnc = mx.sym.transpose(seq2, axes=(1, 0, 2))
    masked = mx.sym.SequenceMask(tnc, sequence_length=lengths, use_sequence_length=True,
                                 value=0.5)
    fused = mx.sym.RNN(masked, mx.sym.Variable("rnn_params"), mx.sym.Variable("rnn_h0"),
                       state_size=H, num_layers=2, mode="gru", state_outputs=True,
                       name="grurnn")
    last = mx.sym.SequenceLast(fused[0], sequence_length=lengths, use_sequence_length=True)
    head = mx.sym.concat(last, states[0], dim=1)
    fc = mx.sym.FullyConnected(head, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def run(mx):
    out = {}
    rng = np.random.RandomState(11)
    x = rng.uniform(-1, 1, size=(3 * N, T, D)).astype(np.float32)
    y = rng.randint(0, 3, size=(3 * N,)).astype(np.float32)
    lengths = np.array([5, 2, 4], np.float32)
    with mx.name.NameManager():
        sym = _net(mx)
    shapes = dict(data=(N, T, D), lengths=(N,), h0=(N, 2 * H), c0=(N, 2 * H),
                  rnn_h0=(2, N, H), softmax_label=(N,))
    args, auxs = det_params(sym, scale=0.3, **shapes)
    mod = mx.mod.Module(sym, data_names=["data", "lengths", "h0", "c0", "rnn_h0"],
                        context=mx.cpu())
    descs = [mx.io.DataDesc(k, shapes[k]) for k in ("data", "lengths", "h0", "c0")]
    descs.append(mx.io.DataDesc("rnn_h0", shapes["rnn_h0"], layout="TNC"))  # batch axis 1
    mod.bind(data_shapes=descs,
             label_shapes=[("softmax_label", (N,))], inputs_need_grad=True)
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01,
                                                           "wd": 0.001})
    h0 = rng.uniform(-0.5, 0.5, (N, 2 * H)).astype(np.float32)
    c0 = rng.uniform(-0.5, 0.5, (N, 2 * H)).astype(np.float32)
    r0 = rng.uniform(-0.5, 0.5, (2, N, H)).astype(np.float32)
    for i in range(3):
        sl = slice(N * i, N * (i + 1))
        batch = mx.io.DataBatch([mx.nd.array(a) for a in (x[sl], lengths, h0, c0, r0)],
                                [mx.nd.array(y[sl])])
        mod.forward_backward(batch)
        out["prob%d" % i] = mod.get_outputs()[0].asnumpy()
        grads = mod.get_input_grads()
        for name, g in zip(("data", "h0", "c0", "rnn_h0"), (grads[0],) + tuple(grads[2:])):
            out["d%s%d" % (name, i)] = g.asnumpy()
        mod.update()
    arg, _ = mod.get_params()
    for name in sorted(arg):
        out["p_" + name] = arg[name].asnumpy()
    return out
