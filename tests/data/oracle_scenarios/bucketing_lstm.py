"""BucketingModule + mx.rnn: an LSTM language model over several bucket lengths, trained with
Adam and scored with Perplexity; the default bucket is NOT the largest one."""
import random

import numpy as np


def sentences(seed=0, count=60, vocab=20):
    rng = np.random.RandomState(seed)
    return [list(rng.randint(1, vocab, size=rng.randint(3, 13))) for _ in range(count)]


def run(mx):
    np.random.seed(0)  # BucketSentenceIter shuffles with Python's and numpy's generators
    random.seed(0)
    vocab, hidden, embed = 20, 8, 6
    it = mx.rnn.BucketSentenceIter(sentences(), batch_size=4, buckets=[4, 8, 12],
                                   invalid_label=0)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix="lstm_l0_"))
    stack.add(mx.rnn.LSTMCell(num_hidden=hidden, prefix="lstm_l1_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data, input_dim=vocab, output_dim=embed, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=emb, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, hidden))
        pred = mx.sym.FullyConnected(pred, num_hidden=vocab, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=8, context=mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc("data", (4, 8))],
             label_shapes=[mx.io.DataDesc("softmax_label", (4, 8))])
    # deterministic parameters from numpy, set by name
    arg_shapes, _, _ = mod.symbol.infer_shape(data=(4, 8), softmax_label=(4, 8))
    rng = np.random.RandomState(1)
    args = {n: mx.nd.array(rng.uniform(-0.2, 0.2, s)) for n, s in
            zip(mod.symbol.list_arguments(), arg_shapes) if n not in ("data", "softmax_label")}
    mod.set_params(args, {})
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.02})
    metric = mx.metric.Perplexity(ignore_label=0)
    out = {}
    step = 0
    for epoch in range(2):
        it.reset()
        metric.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
            out["ppl_%02d" % step] = metric.get()[1]
            out["key_%02d" % step] = batch.bucket_key
            step += 1
    arg, aux = mod.get_params()
    for name, value in arg.items():
        out["arg_" + name] = value.asnumpy()
    it.reset()
    out["score_ppl"] = mod.score(it, mx.metric.Perplexity(ignore_label=0))[0][1]
    return out
