"""PyTorch eager peer (run with /tmp/ptenv/bin/python):
`/tmp/ptenv/bin/python bench_torch.py --net mlp|lenet|lstm|lstm_fused|sdnet|w2v_nce|lstm_nce`.

The same networks, data (workloads.numpy_batches) and optimizer (SGD lr 0.01, momentum 0.9) as
the Module-API peers; the loss is the mean cross-entropy, which gives the same gradients as
MXNet's SoftmaxOutput with Module's default rescale_grad = 1/batch. `lstm` is a hand-unrolled
nn.LSTMCell loop over the 35 steps (the peer of mx.rnn.LSTMCell.unroll); `lstm_fused` is
nn.LSTM (the peer of mx.sym.RNN). Initial LSTM states are zeros every step, as in the symbol.
Prints one JSON line.
"""
import benchutil  # isort: skip  (pins the thread pools before torch/numpy are imported)
import numpy as np
import torch
import workloads as wl
import workloads_more as more
from torch import nn


class MLP(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


class LeNet(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2),
                         nn.Conv2d(20, 50, 5), nn.Tanh(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(800, 500), nn.Tanh(), nn.Linear(500, 10))


class LSTMLM(nn.Module):
    def __init__(self, fused: bool):
        super().__init__()
        self.fused = fused
        self.embed = nn.Embedding(wl.VOCAB, wl.EMBED)
        if fused:
            self.rnn = nn.LSTM(wl.EMBED, wl.HIDDEN, num_layers=1, batch_first=True)
        else:
            self.cell = nn.LSTMCell(wl.EMBED, wl.HIDDEN)
        self.pred = nn.Linear(wl.HIDDEN, wl.VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)                                   # (N, T, E)
        if self.fused:
            out, _ = self.rnn(x)                                 # zero initial states
        else:
            n = x.shape[0]
            h = x.new_zeros(n, wl.HIDDEN)
            c = x.new_zeros(n, wl.HIDDEN)
            steps = []
            for t in range(x.shape[1]):
                h, c = self.cell(x[:, t], (h, c))
                steps.append(h)
            out = torch.stack(steps, dim=1)                      # (N, T, H)
        return self.pred(out.reshape(-1, wl.HIDDEN))


def conv_bn(channels_in: int, relu: bool) -> list:
    layers = [nn.Conv2d(channels_in, more.SD_FILTERS, 3, padding=1),
              nn.BatchNorm2d(more.SD_FILTERS, eps=2e-5, momentum=0.1)]  # MXNet's 0.9
    return layers + [nn.ReLU()] if relu else layers


class SDNet(nn.Module):
    """sdnet (workloads_more.py): head, residual blocks x + branch(x), tail."""

    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(*conv_bn(1, relu=True))
        self.blocks = nn.ModuleList(
            nn.Sequential(*conv_bn(more.SD_FILTERS, True), *conv_bn(more.SD_FILTERS, False))
            for _ in range(more.SD_BLOCKS))
        self.tail = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(more.SD_FILTERS * 14 * 14, 10))

    def forward(self, x):
        x = self.head(x)
        for block in self.blocks:
            x = x + block(x)
        return self.tail(x)


class W2VNCE(nn.Module):
    """w2v_nce: summed context embeddings scored against the sampled words' embeddings."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(more.NCE_VOCAB, more.W2V_DIM)
        self.nce_embed = nn.Embedding(more.NCE_VOCAB, more.W2V_DIM)

    def forward(self, words, sampled):
        context = self.embed(words).sum(1)                            # (N, D)
        return (self.nce_embed(sampled) * context[:, None, :]).sum(2)  # (N, K)


class LSTMNCE(nn.Module):
    """lstm_nce: an nn.LSTMCell loop (as the `lstm` peer), then batch_dot scores plus a bias."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(more.NCE_VOCAB, more.LSTM_EMBED)
        self.cell = nn.LSTMCell(more.LSTM_EMBED, more.LSTM_HIDDEN)
        self.nce_embed = nn.Embedding(more.NCE_VOCAB, more.LSTM_HIDDEN)
        self.nce_bias = nn.Embedding(more.NCE_VOCAB, 1)

    def forward(self, words, sampled):
        x = self.embed(words)
        h = x.new_zeros(x.shape[0], more.LSTM_HIDDEN)
        c = x.new_zeros(x.shape[0], more.LSTM_HIDDEN)
        steps = []
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
            steps.append(h)
        hidden = torch.stack(steps, dim=1).reshape(-1, more.LSTM_HIDDEN, 1)
        sampled = sampled.reshape(hidden.shape[0], -1)
        scores = torch.bmm(self.nce_embed(sampled), hidden) + self.nce_bias(sampled)
        return scores.reshape(sampled.shape)


def nce_loss(batch: int):
    """The summed logistic loss over the batch's samples, divided by the batch size: the
    gradient of LogisticRegressionOutput under Module's rescale_grad = 1/batch."""
    def loss(scores, weight):
        weight = weight.reshape(scores.shape)
        return nn.functional.binary_cross_entropy_with_logits(scores, weight,
                                                              reduction="sum") / batch
    return loss


def build(net: str, batch: int):
    """(model, optimizer, batches as (inputs tuple, target), loss function)."""
    torch.manual_seed(wl.SEED)
    model = {"mlp": MLP, "lenet": LeNet, "sdnet": SDNet, "w2v_nce": W2VNCE,
             "lstm_nce": LSTMNCE}.get(net)
    model = model() if model else LSTMLM(fused=(net == "lstm_fused"))
    batches = []
    for arrays in wl.numpy_batches(net, batch):
        if net in ("mlp", "lenet", "sdnet"):
            x, y = arrays
            batches.append(((torch.from_numpy(x),), torch.from_numpy(y).long()))
        elif net in more.NETS:
            words, sampled, weight = arrays
            batches.append(((torch.from_numpy(words).long(), torch.from_numpy(sampled).long()),
                            torch.from_numpy(weight)))
        else:
            x, y = arrays
            batches.append(((torch.from_numpy(x).long(),),
                            torch.from_numpy(y).long().reshape(-1)))
    opt = torch.optim.SGD(model.parameters(), lr=wl.LR, momentum=wl.MOMENTUM)
    loss_fn = nce_loss(batch) if net in ("w2v_nce", "lstm_nce") else nn.CrossEntropyLoss()
    return model, opt, batches, loss_fn


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="PyTorch eager training-step benchmark")
    benchutil.add_common_args(parser)
    args = parser.parse_args()
    args.batch = args.batch or benchutil.default_batch(args.net)
    if args.mode == "fit":
        parser.error("PyTorch has no Module.fit; use --mode module (a plain training loop) "
                     "or --mode infer")
    torch.set_num_threads(benchutil.THREADS)
    model, opt, batches, loss_fn = build(args.net, args.batch)
    state = {"i": 0}

    def step():
        x, y = batches[state["i"] % len(batches)]
        state["i"] += 1
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(*x), y)
        loss.backward()
        opt.step()

    if args.mode == "infer":
        model.eval()

        def step():  # noqa: F811  (inference: forward only, no autograd)
            x, _ = batches[state["i"] % len(batches)]
            state["i"] += 1
            with torch.inference_mode():
                torch.softmax(model(*x), dim=-1)

    timer = benchutil.timer_from_args(args, lambda: None, args.batch)  # eager CPU: synchronous
    result = benchutil.measure(step, timer)
    benchutil.emit("torch", args, result, version=torch.__version__, numpy=np.__version__,
                   torch_threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
