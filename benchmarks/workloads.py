"""The benchmark workloads, written once against MXNet 1.9.1's API.

Every function that builds something takes the library as its `mx` argument, so
bench_minimod.py and bench_mxnet.py run the very same script text (`import minimod as mx` vs
`import mxnet as mx`) and build identical symbols (`--dump-symbol` prints the JSON to compare).
The data helpers use NumPy only and are shared with bench_torch.py.

Workloads (float32, synthetic data from a fixed seed, 8 batches cycled):
  mlp         784-512-512-10, ReLU, SoftmaxOutput
  lenet       1x28x28: conv5x5x20 tanh maxpool2, conv5x5x50 tanh maxpool2, fc500 tanh, fc10
  lstm        LM: vocab 2000, embed 200, one LSTM layer of 200, T=35, decoder to 2000;
              mx.rnn.LSTMCell(...).unroll(35, merge_outputs=True) in a BucketingModule
              (one bucket, key 35, as a language model over bucketed sentences runs it)
  lstm_fused  the same LM through mx.rnn.FusedRNNCell (one mx.sym.RNN op, TNC layout)
  sdnet, w2v_nce, lstm_nce   a stochastic-depth residual network of conv + BatchNorm modules
              and two word models with NCE losses: see workloads_more.py
One step = forward + backward + SGD update (lr 0.01, momentum 0.9); in mode "infer" one step is
a forward pass in inference mode (is_train=False) of a module bound for inference.
"""
from __future__ import annotations

import numpy as np
import workloads_more as more

VOCAB, EMBED, HIDDEN, SEQ_LEN = 2000, 200, 200, 35
N_BATCHES = 8
SEED = 0
LR, MOMENTUM = 0.01, 0.9


# ----------------------------------------------------------------------------- data (NumPy)

def data_shape(net: str, batch: int) -> tuple:
    return {"mlp": (batch, 784), "lenet": (batch, 1, 28, 28)}.get(net, (batch, SEQ_LEN))


def label_shape(net: str, batch: int) -> tuple:
    return (batch,) if net in ("mlp", "lenet") else (batch, SEQ_LEN)


def numpy_batches(net: str, batch: int, n: int = N_BATCHES, seed: int = SEED) -> list:
    """`n` (data, label) pairs of float32 arrays; token ids and class labels are float32-valued
    integers (MXNet's convention). The NCE nets give (data, label, label_weight) triples."""
    if net in more.NETS:
        return more.numpy_batches(net, batch, n, seed)
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(n):
        if net in ("mlp", "lenet"):
            x = rng.uniform(-1, 1, size=data_shape(net, batch)).astype(np.float32)
            y = rng.randint(0, 10, size=label_shape(net, batch)).astype(np.float32)
        else:
            x = rng.randint(0, VOCAB, size=data_shape(net, batch)).astype(np.float32)
            y = rng.randint(0, VOCAB, size=label_shape(net, batch)).astype(np.float32)
        out.append((x, y))
    return out


# ------------------------------------------------------------------------- symbols (MXNet API)

def mlp_symbol(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=512, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=512, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lenet_symbol(mx):
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(5, 5), num_filter=20, name="conv1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh1")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=50, name="conv2")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh2")
    net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool2")
    net = mx.sym.Flatten(net, name="flatten")
    net = mx.sym.FullyConnected(net, num_hidden=500, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="tanh3")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def lstm_symbol(mx, fused: bool, seq_len: int = SEQ_LEN):
    data = mx.sym.Variable("data")                        # (N, T) token ids
    label = mx.sym.Variable("softmax_label")              # (N, T)
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name="embed")
    if fused:
        cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=1, mode="lstm", prefix="lstm_")
        tnc = mx.sym.SwapAxis(embed, dim1=0, dim2=1, name="to_tnc")
        outputs, _ = cell.unroll(seq_len, inputs=tnc, layout="TNC", merge_outputs=True)
        outputs = mx.sym.SwapAxis(outputs, dim1=0, dim2=1, name="to_ntc")
    else:
        cell = mx.rnn.LSTMCell(HIDDEN, prefix="lstm_")
        outputs, _ = cell.unroll(seq_len, inputs=embed, layout="NTC", merge_outputs=True)
    pred = mx.sym.Reshape(outputs, shape=(-1, HIDDEN), name="flat_out")
    pred = mx.sym.FullyConnected(pred, num_hidden=VOCAB, name="pred")
    label = mx.sym.Reshape(label, shape=(-1,), name="flat_label")
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


def symbol(mx, net: str):
    if net in more.NETS:
        return more.symbol(mx, net)
    if net == "mlp":
        return mlp_symbol(mx)
    if net == "lenet":
        return lenet_symbol(mx)
    return lstm_symbol(mx, fused=(net == "lstm_fused"))


# -------------------------------------------------------------------------- Module (MXNet API)

def initializer(mx, net: str):
    if net.startswith("lstm"):
        return mx.init.Uniform(0.1)
    return mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2)


def make_module(mx, net: str, batch: int, for_training: bool = True, context=None):
    """A bound module with initialised parameters (and, for training, an SGD-momentum
    optimizer), and its 8 DataBatches. The LSTM LMs run in a BucketingModule. `context`
    (default cpu()) is where the module runs (bench_gpu.py passes gpu(0))."""
    context = context or mx.cpu()
    if net in more.NETS:
        return more.make_module(mx, net, batch, for_training, context, SEED, LR, MOMENTUM,
                                N_BATCHES)
    mx.random.seed(SEED)
    data_shapes = [("data", data_shape(net, batch))]
    label_shapes = [("softmax_label", label_shape(net, batch))]
    if net.startswith("lstm"):
        def sym_gen(seq_len):
            return (lstm_symbol(mx, net == "lstm_fused", seq_len), ("data",),
                    ("softmax_label",))
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=SEQ_LEN, context=context)
    else:
        mod = mx.mod.Module(symbol(mx, net), data_names=("data",),
                            label_names=("softmax_label",), context=context)
    mod.bind(data_shapes=data_shapes, label_shapes=label_shapes, for_training=for_training)
    mod.init_params(initializer=initializer(mx, net))
    if for_training:
        mod.init_optimizer(optimizer="sgd",
                           optimizer_params={"learning_rate": LR, "momentum": MOMENTUM})
    extra = {}
    if net.startswith("lstm"):
        extra = {"bucket_key": SEQ_LEN,
                 "provide_data": [mx.io.DataDesc(*d) for d in data_shapes],
                 "provide_label": [mx.io.DataDesc(*d) for d in label_shapes]}
    batches = [mx.io.DataBatch(data=[mx.nd.array(x)], label=[mx.nd.array(y)], **extra)
               for x, y in numpy_batches(net, batch)]
    return mod, batches


def infer_step_fn(mod, batches):
    """One forward pass in inference mode per call, cycling the batches."""
    state = {"i": 0}

    def step():
        b = batches[state["i"] % len(batches)]
        state["i"] += 1
        mod.forward(b, is_train=False)

    return step


def module_step_fn(mod, batches):
    """One training step per call, cycling the batches."""
    state = {"i": 0}

    def step():
        b = batches[state["i"] % len(batches)]
        state["i"] += 1
        mod.forward_backward(b)
        mod.update()

    return step


def run_fit(mx, net: str, batch: int, timer, stop_exc) -> None:
    """`Module.fit` over an NDArrayIter of the 8 batches (eval_metric 'acc', no eval data);
    `timer.tick()` runs in the batch_end_callback and raises `stop_exc` when done."""
    mx.random.seed(SEED)
    pairs = numpy_batches(net, batch)
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    it = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False, label_name="softmax_label")
    mod = mx.mod.Module(symbol(mx, net), data_names=("data",),
                        label_names=("softmax_label",), context=mx.cpu())
    try:
        mod.fit(it, eval_metric="acc", optimizer="sgd",
                optimizer_params={"learning_rate": LR, "momentum": MOMENTUM},
                initializer=initializer(mx, net), num_epoch=1_000_000,
                batch_end_callback=lambda _param: timer.tick())
    except stop_exc:
        pass


def main(mx, lib: str) -> None:
    """Command line shared by bench_minimod.py and bench_mxnet.py."""
    import argparse

    import benchutil

    parser = argparse.ArgumentParser(description="%s Module-API training-step benchmark" % lib)
    benchutil.add_common_args(parser)
    parser.add_argument("--dump-symbol", action="store_true",
                        help="print the workload's symbol JSON and exit")
    args = parser.parse_args()
    args.batch = args.batch or benchutil.default_batch(args.net)
    if args.dump_symbol:
        print(symbol(mx, args.net).tojson())
        return
    sync = mx.nd.waitall
    if args.mode == "fit":
        timer = benchutil.timer_from_args(args, sync, args.batch, raise_when_done=True)
        run_fit(mx, args.net, args.batch, timer, benchutil.StopBenchmark)
        result = timer.result()
    else:
        training = args.mode != "infer"
        mod, batches = make_module(mx, args.net, args.batch, for_training=training)
        timer = benchutil.timer_from_args(args, sync, args.batch)
        step = module_step_fn(mod, batches) if training else infer_step_fn(mod, batches)
        result = benchutil.measure(step, timer)
    version = getattr(mx, "__minimod_version__", None) or getattr(mx, "__version__", "?")
    benchutil.emit(lib, args, result, version=version,
                   numpy=np.__version__)
