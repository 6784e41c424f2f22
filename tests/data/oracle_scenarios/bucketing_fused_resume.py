"""A BucketingModule over mx.rnn.FusedRNNCell (2-layer bidirectional LSTM, the RNN operator),
trained on two bucket lengths with SGD momentum, checkpointed, loaded with
BucketingModule.load and trained on; then the fused weights unpacked to the unfused cells
(`unpack_weights`, then the unfused cells' `pack_weights`) give the same outputs in an
unrolled graph."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import det_params, to_nd  # noqa: E402

N, V, E, H, C = 3, 12, 5, 4, 3


def _cell(mx):
    return mx.rnn.FusedRNNCell(H, num_layers=2, mode="lstm", bidirectional=True,
                               prefix="lstm_")


def _sym_gen(mx):
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data, input_dim=V, output_dim=E, name="embed")
        outputs, _ = _cell(mx).unroll(seq_len, emb, layout="NTC", merge_outputs=True)
        last = mx.sym.SequenceLast(mx.sym.transpose(outputs, axes=(1, 0, 2)))
        fc = mx.sym.FullyConnected(last, num_hidden=C, name="fc")
        return mx.sym.SoftmaxOutput(fc, label, name="softmax"), ("data",), ("softmax_label",)
    return sym_gen


def _batch(mx, rng, seq_len):
    x = rng.randint(0, V, size=(N, seq_len)).astype(np.float32)
    y = rng.randint(0, C, size=(N,)).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=seq_len,
                           provide_data=[mx.io.DataDesc("data", (N, seq_len))],
                           provide_label=[mx.io.DataDesc("softmax_label", (N,))])


def _train(mx, mod, batches, out, tag):
    for i, b in enumerate(batches):
        mod.forward_backward(b)
        out["%s/prob%d" % (tag, i)] = mod.get_outputs()[0].asnumpy()
        mod.update()


def run(mx):
    out = {}
    rng = np.random.RandomState(29)
    batches = [_batch(mx, rng, t) for t in (4, 7, 4, 7, 7)]
    sym, _, _ = _sym_gen(mx)(7)
    args, auxs = det_params(sym, scale=0.3, data=(N, 7), softmax_label=(N,))
    mod = mx.mod.BucketingModule(_sym_gen(mx), default_bucket_key=7, context=mx.cpu())
    mod.bind(data_shapes=[("data", (N, 7))], label_shapes=[("softmax_label", (N,))])
    mod.set_params(to_nd(mx, args), to_nd(mx, auxs))
    opt = {"learning_rate": 0.1, "momentum": 0.9}
    mod.init_optimizer(optimizer="sgd", optimizer_params=opt)
    _train(mx, mod, batches[:3], out, "first")
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "fused")
        mod.save_checkpoint(prefix, 3)
        loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=_sym_gen(mx),
                                             default_bucket_key=7, context=mx.cpu())
    loaded.bind(data_shapes=[("data", (N, 7))], label_shapes=[("softmax_label", (N,))])
    loaded.init_optimizer(optimizer="sgd", optimizer_params=opt)
    _train(mx, loaded, batches[3:], out, "resumed")
    arg, _ = loaded.get_params()
    for name in sorted(arg):
        out["p_" + name] = arg[name].asnumpy()
    # the unfused cells over the unpacked weights
    gates = _cell(mx).unpack_weights({"lstm_parameters": arg["lstm_parameters"]})
    unfused = _cell(mx).unfuse()
    unpacked = unfused.pack_weights(gates)  # per-gate arrays joined per cell
    data = mx.sym.Variable("data")
    outputs, _ = unfused.unroll(5, data, layout="NTC", merge_outputs=True)
    xs = rng.uniform(-1, 1, size=(N, 5, E)).astype(np.float32)
    exe = outputs.bind(mx.cpu(), dict(unpacked, data=mx.nd.array(xs)))
    out["unfused"] = exe.forward()[0].asnumpy()
    for name in sorted(unpacked):
        out["w_" + name] = unpacked[name].asnumpy()
    fused, _ = _cell(mx).unroll(5, data, layout="NTC", merge_outputs=True)
    exe = fused.bind(mx.cpu(), {"data": mx.nd.array(xs),
                                "lstm_parameters": arg["lstm_parameters"]})
    out["fused"] = exe.forward()[0].asnumpy()
    return out
