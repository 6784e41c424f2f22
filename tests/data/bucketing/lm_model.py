"""The bucketing LSTM used by the bucketing tests, written against the MXNet API (`mx`)."""
import random

import numpy as np

VOCAB, HIDDEN, EMBED, BATCH = 20, 8, 6, 4
BUCKETS = [4, 8, 12]


def sentences(seed=0, count=60):
    rng = np.random.RandomState(seed)
    return [list(rng.randint(1, VOCAB, size=rng.randint(3, 13))) for _ in range(count)]


def make_sym_gen(mx):
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(num_hidden=HIDDEN, prefix="lstm_l0_"))
    stack.add(mx.rnn.LSTMCell(num_hidden=HIDDEN, prefix="lstm_l1_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        emb = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=emb, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, HIDDEN))
        pred = mx.sym.FullyConnected(pred, num_hidden=VOCAB, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)
    return sym_gen


def train(mx, default_key=8, epochs=1, ctx=None):
    np.random.seed(0)
    random.seed(0)
    it = mx.rnn.BucketSentenceIter(sentences(), batch_size=BATCH, buckets=BUCKETS,
                                   invalid_label=0)
    mod = mx.mod.BucketingModule(make_sym_gen(mx), default_bucket_key=default_key,
                                 context=ctx or mx.cpu())
    mod.bind(data_shapes=[mx.io.DataDesc("data", (BATCH, default_key))],
             label_shapes=[mx.io.DataDesc("softmax_label", (BATCH, default_key))])
    arg_shapes, _, _ = mod.symbol.infer_shape(data=(BATCH, default_key),
                                              softmax_label=(BATCH, default_key))
    rng = np.random.RandomState(1)
    args = {n: mx.nd.array(rng.uniform(-0.2, 0.2, s)) for n, s in
            zip(mod.symbol.list_arguments(), arg_shapes) if n not in ("data", "softmax_label")}
    mod.set_params(args, {})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5,
                                                          "momentum": 0.5})
    for _ in range(epochs):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    return mod, it


def probe_batches(mx):
    """One fixed batch per bucket, for comparing predictions."""
    rng = np.random.RandomState(7)
    batches = []
    for key in BUCKETS:
        data = rng.randint(1, VOCAB, size=(BATCH, key)).astype(np.float32)
        label = np.concatenate([data[:, 1:], np.zeros((BATCH, 1), np.float32)], axis=1)
        batches.append(mx.io.DataBatch(
            [mx.nd.array(data)], [mx.nd.array(label)], bucket_key=key,
            provide_data=[mx.io.DataDesc("data", (BATCH, key))],
            provide_label=[mx.io.DataDesc("softmax_label", (BATCH, key))]))
    return batches


def predictions(mx, mod):
    out = {}
    for batch in probe_batches(mx):
        mod.forward(batch, is_train=False)
        out["pred_%d" % batch.bucket_key] = mod.get_outputs()[0].asnumpy()
    return out
