"""The stochastic-depth residual network and the two NCE word models, in MXNet 1.9.1's API.

Like workloads.py (which dispatches here for these nets), every builder takes the library as
its `mx` argument, so minimod and MXNet run the same script text; the data helpers use NumPy
only and are shared with bench_torch.py.

  sdnet     MNIST-shaped 1x28x28 data, a SequentialModule: a head module (conv3x3x16 pad 1,
            BatchNorm, relu), SD_BLOCKS residual modules (each its own Module computing
            conv-BN-relu-conv-BN on 16 channels, plus the identity added by the residual
            module, as stochastic depth's modules do), a tail module (relu, maxpool 2x2, fc10,
            SoftmaxOutput). BatchNorm: fix_gamma=False, eps 2e-5, momentum 0.9. The gates stay
            open (death rate 0), so every step does the same work and windows compare.
  w2v_nce   word2vec CBOW with NCE: the W2V_CONTEXT context words' embeddings (vocab NCE_VOCAB,
            W2V_DIM) are summed; the true word and NCE_NOISE noise words get their output
            embeddings; scores = sum(broadcast_mul(output embeddings, context sum), axis=2);
            a logistic loss (LogisticRegressionOutput) against label_weight (1 for the true
            word, else 0).
  lstm_nce  an LSTM language model with NCE in place of the softmax over NCE_VOCAB words:
            embedding 200, one mx.rnn.LSTMCell of 200 unrolled over T=35 (merge_outputs),
            then for every position an NCE head whose scores are batch_dot(output
            embeddings, hidden state) plus a per-word bias.

Written for these benchmarks from the descriptions of MXNet's example/stochastic-depth and
example/nce-loss (not from their code). The NCE models feed the sampled word ids as a second
data input ("label") and the 0/1 targets as the label ("label_weight"); noise words are drawn
uniformly. Embedding gradients are dense (MXNet's default), so a step also writes and updates
the whole tables.
"""
from __future__ import annotations

import logging

import numpy as np

NETS = ("sdnet", "w2v_nce", "lstm_nce")
DEFAULT_BATCH = {"sdnet": 128, "w2v_nce": 256, "lstm_nce": 32}

SD_BLOCKS, SD_FILTERS = 6, 16
NCE_VOCAB, NCE_NOISE = 50000, 5
W2V_DIM, W2V_CONTEXT = 100, 4
LSTM_EMBED, LSTM_HIDDEN, LSTM_SEQ = 200, 200, 35


# ----------------------------------------------------------------------------- data (NumPy)

def input_shapes(net: str, batch: int) -> tuple:
    """([(data name, shape)], [(label name, shape)]) of `net`."""
    k = NCE_NOISE + 1
    if net == "sdnet":
        return [("data", (batch, 1, 28, 28))], [("softmax_label", (batch,))]
    if net == "w2v_nce":
        return ([("data", (batch, W2V_CONTEXT)), ("label", (batch, k))],
                [("label_weight", (batch, k))])
    return ([("data", (batch, LSTM_SEQ)), ("label", (batch, LSTM_SEQ, k))],
            [("label_weight", (batch, LSTM_SEQ, k))])


def numpy_batches(net: str, batch: int, n: int, seed: int) -> list:
    """`n` batches, each a tuple of float32 arrays in the order of `input_shapes` (data
    inputs, then labels); word ids are float32-valued integers (MXNet's convention)."""
    rng = np.random.RandomState(seed)
    data_shapes, label_shapes = input_shapes(net, batch)
    out = []
    for _ in range(n):
        if net == "sdnet":
            x = rng.uniform(0, 1, size=data_shapes[0][1]).astype(np.float32)
            y = rng.randint(0, 10, size=label_shapes[0][1]).astype(np.float32)
            out.append((x, y))
            continue
        words = rng.randint(0, NCE_VOCAB, size=data_shapes[0][1]).astype(np.float32)
        sampled = rng.randint(0, NCE_VOCAB, size=data_shapes[1][1]).astype(np.float32)
        weight = np.zeros(label_shapes[0][1], np.float32)
        weight[..., 0] = 1  # the first sampled word is the true one
        out.append((words, sampled, weight))
    return out


# ------------------------------------------------------------------------- symbols (MXNet API)

def conv_bn(mx, x, name: str, relu: bool):
    x = mx.sym.Convolution(x, num_filter=SD_FILTERS, kernel=(3, 3), pad=(1, 1),
                           name=name + "_conv")
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + "_bn")
    return mx.sym.Activation(x, act_type="relu", name=name + "_relu") if relu else x


def sd_symbols(mx) -> tuple:
    """(head, [branch of each residual block], tail) symbols of sdnet."""
    head = conv_bn(mx, mx.sym.Variable("data"), "head", relu=True)
    branches = [conv_bn(mx, conv_bn(mx, mx.sym.Variable("data"), "b%d_a" % i, relu=True),
                        "b%d_b" % i, relu=False) for i in range(SD_BLOCKS)]
    tail = mx.sym.Activation(mx.sym.Variable("data"), act_type="relu", name="tail_relu")
    tail = mx.sym.Pooling(tail, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool")
    tail = mx.sym.FullyConnected(mx.sym.Flatten(tail, name="flatten"), num_hidden=10,
                                 name="fc")
    return head, branches, mx.sym.SoftmaxOutput(tail, name="softmax")


def nce_head(mx, hidden, label, label_weight, vocab: int, dim: int, bias: bool):
    """Logistic loss of the scores of the sampled words (label, (M, K)) against hidden (M, dim):
    with `bias` a batch_dot plus a per-word bias, else a broadcast product summed over dim."""
    k = NCE_NOISE + 1
    out_embed = mx.sym.Embedding(label, input_dim=vocab, output_dim=dim, name="nce_embed")
    if not bias:
        hidden = mx.sym.Reshape(hidden, shape=(-1, 1, dim), name="hidden_row")
        scores = mx.sym.sum(mx.sym.broadcast_mul(out_embed, hidden, name="products"), axis=2,
                            name="scores")  # (M, K)
        return mx.sym.LogisticRegressionOutput(scores, label_weight, name="nce")
    hidden = mx.sym.Reshape(hidden, shape=(-1, dim, 1), name="hidden_col")
    scores = mx.sym.batch_dot(out_embed, hidden, name="scores")  # (M, K, 1)
    if bias:
        scores = scores + mx.sym.Embedding(label, input_dim=vocab, output_dim=1,
                                           name="nce_bias")
    scores = mx.sym.Reshape(scores, shape=(-1, k), name="flat_scores")
    return mx.sym.LogisticRegressionOutput(scores, label_weight, name="nce")


def w2v_symbol(mx):
    context = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=NCE_VOCAB,
                               output_dim=W2V_DIM, name="embed")       # (N, C, D)
    context = mx.sym.sum(context, axis=1, name="context_sum")            # (N, D)
    return nce_head(mx, context, mx.sym.Variable("label"), mx.sym.Variable("label_weight"),
                    NCE_VOCAB, W2V_DIM, bias=False)


def lstm_nce_symbol(mx):
    k = NCE_NOISE + 1
    embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=NCE_VOCAB,
                             output_dim=LSTM_EMBED, name="embed")
    cell = mx.rnn.LSTMCell(LSTM_HIDDEN, prefix="lstm_")
    outputs, _ = cell.unroll(LSTM_SEQ, inputs=embed, layout="NTC", merge_outputs=True)
    hidden = mx.sym.Reshape(outputs, shape=(-1, LSTM_HIDDEN), name="flat_out")
    label = mx.sym.Reshape(mx.sym.Variable("label"), shape=(-1, k), name="flat_label")
    weight = mx.sym.Reshape(mx.sym.Variable("label_weight"), shape=(-1, k), name="flat_weight")
    return nce_head(mx, hidden, label, weight, NCE_VOCAB, LSTM_HIDDEN, bias=True)


def symbol(mx, net: str):
    """The net's symbol; for sdnet, its residual block's branch (the modules hold the rest)."""
    if net == "sdnet":
        return sd_symbols(mx)[1][0]
    return w2v_symbol(mx) if net == "w2v_nce" else lstm_nce_symbol(mx)


# -------------------------------------------------------------------------- modules (MXNet API)

def residual_module_class(mx):
    """A BaseModule subclass of `mx`: out = data + branch(data) while its gate is open, as a
    stochastic-depth block; the gate closes with probability `death_rate` in training."""

    class ResidualModule(mx.module.BaseModule):
        def __init__(self, branch, context, death_rate: float = 0.0, seed: int = 0):
            super().__init__(logger=logging)
            self._branch = mx.mod.Module(branch, data_names=("data",), label_names=None,
                                         context=context)
            self._ctx = context[0] if isinstance(context, (list, tuple)) else context
            self._death_rate = death_rate
            self._rng = np.random.RandomState(seed)
            self._open = True
            self._outputs, self._grads = [], []

        data_names = property(lambda self: self._branch.data_names)
        output_names = property(lambda self: self._branch.output_names)
        data_shapes = property(lambda self: self._branch.data_shapes)
        label_shapes = property(lambda self: self._branch.label_shapes)
        output_shapes = property(lambda self: self._branch.output_shapes)

        def get_params(self):
            return self._branch.get_params()

        def init_params(self, *args, **kwargs):
            self._branch.init_params(*args, **kwargs)
            self.params_initialized = True

        def bind(self, data_shapes, *args, **kwargs):
            self._branch.bind(data_shapes, *args, **kwargs)
            shapes = [shape for _, shape in self._branch.output_shapes]
            self._outputs = [mx.nd.zeros(shape, ctx=self._ctx) for shape in shapes]
            self._grads = [mx.nd.zeros(shape, ctx=self._ctx) for shape in shapes]
            self.binded = True
            self.for_training = self._branch.for_training
            self.inputs_need_grad = self._branch.inputs_need_grad

        def init_optimizer(self, *args, **kwargs):
            self._branch.init_optimizer(*args, **kwargs)
            self.optimizer_initialized = True

        def forward(self, data_batch, is_train=None):
            train = self.for_training if is_train is None else is_train
            self._open = not train or self._rng.uniform() >= self._death_rate
            if not self._open:
                self._skip = data_batch.data
                return
            self._branch.forward(data_batch, is_train=train)
            for out, comp, skip in zip(self._outputs, self._branch.get_outputs(),
                                       data_batch.data):
                mx.nd.elemwise_add(comp, skip, out=out)

        def backward(self, out_grads=None):
            self._out_grads = out_grads
            if self._open:
                self._branch.backward(out_grads=out_grads)
                for grad, comp, head in zip(self._grads, self._branch.get_input_grads(),
                                            out_grads):
                    mx.nd.elemwise_add(comp, head, out=grad)

        def update(self):
            if self._open:
                self._branch.update()

        def update_metric(self, eval_metric, labels, pre_sliced=False):
            pass

        def get_outputs(self, merge_multi_context=True):
            return self._outputs if self._open else self._skip

        def get_input_grads(self, merge_multi_context=True):
            return self._grads if self._open else self._out_grads

    return ResidualModule


def sd_module(mx, context):
    head, branches, tail = sd_symbols(mx)
    residual = residual_module_class(mx)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(head, data_names=("data",), label_names=None, context=context))
    for i, branch in enumerate(branches):
        seq.add(residual(branch, context, seed=i), auto_wiring=True)
    seq.add(mx.mod.Module(tail, data_names=("data",), label_names=("softmax_label",),
                          context=context), take_labels=True, auto_wiring=True)
    return seq


def make_module(mx, net: str, batch: int, for_training: bool, context, seed: int,
                lr: float, momentum: float, n_batches: int):
    """A bound module of `net` with initialised parameters (and SGD-momentum for training),
    and its DataBatches, as workloads.make_module."""
    mx.random.seed(seed)
    data_shapes, label_shapes = input_shapes(net, batch)
    if net == "sdnet":
        mod = sd_module(mx, context)
        init = mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2)
    else:
        mod = mx.mod.Module(symbol(mx, net), data_names=[n for n, _ in data_shapes],
                            label_names=[n for n, _ in label_shapes], context=context)
        init = mx.init.Uniform(0.1)
    mod.bind(data_shapes=data_shapes, label_shapes=label_shapes, for_training=for_training)
    mod.init_params(initializer=init)
    if for_training:
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": lr, "momentum": momentum})
    n_data = len(data_shapes)
    batches = [mx.io.DataBatch(data=[mx.nd.array(a) for a in arrays[:n_data]],
                               label=[mx.nd.array(a) for a in arrays[n_data:]])
               for arrays in numpy_batches(net, batch, n_batches, seed)]
    return mod, batches
