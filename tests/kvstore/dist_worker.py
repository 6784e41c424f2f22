"""One worker of the dist_sync training tests: `Module.fit` on its shard, then its parameters.

    python -m minimod.launch -n 2 -- python tests/kvstore/dist_worker.py OUT KVSTORE NDEV OPT

Every worker takes batches of 8 from its shard; KVSTORE 'local' is the single-process
reference (no MPI needed) that takes batches of 8 * N for N workers. Each rank
writes OUT/params-rank<r>.npz and checkpoints under OUT/ckpt-r<r>; only rank 0's may exist.
OPT 'sgd' takes Module's flat update path, 'mysgd' (the same arithmetic in a user subclass)
the per-key path that packs every gradient into one flat buffer per dtype.
"""
import os
import sys

import numpy as np

import minimod as mx

PER_WORKER = 8
SAMPLES = 48
EPOCHS = 2
LR, MOMENTUM, WD = 0.5, 0.9, 1e-3


class MySGD(mx.optimizer.SGD):
    """SGD under another class: Module cannot use its flat update for it."""


def data():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (SAMPLES, 6)).astype(np.float32)
    y = rng.randint(0, 3, SAMPLES).astype(np.float32)
    return x, y


def symbol():
    with mx.name.NameManager():
        net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
        net = mx.sym.Activation(net, act_type="tanh")
        net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
        return mx.sym.SoftmaxOutput(net, name="softmax")


def train(out: str, kvstore: str, ndev: int, opt_name: str, as_workers: int = 1) -> dict:
    if kvstore == "local":  # one process doing the work of `as_workers` workers
        rank, workers, batch = 0, 1, PER_WORKER * as_workers
    else:
        probe = mx.kv.create(kvstore)  # MXNet's pattern: the store tells the shard
        rank, workers, batch = probe.rank, probe.num_workers, PER_WORKER
    x, y = data()
    train_iter = mx.io.NDArrayIter(x, y, batch_size=batch, num_parts=workers, part_index=rank)
    mod = mx.mod.Module(symbol(), context=[mx.cpu(i) for i in range(ndev)])
    # every rank draws its own initial weights: the store must hand out rank 0's
    mx.random.seed(rank)
    if opt_name == "mysgd":  # (no wd: built without the symbol, it would decay biases too)
        optimizer, params = MySGD(learning_rate=LR, momentum=MOMENTUM,
                                  rescale_grad=1.0 / (batch * workers)), ()
    else:
        optimizer, params = "sgd", {"learning_rate": LR, "momentum": MOMENTUM, "wd": WD}
    mod.fit(train_iter, num_epoch=EPOCHS, kvstore=kvstore, optimizer=optimizer,
            optimizer_params=params, initializer=mx.init.Xavier(),
            epoch_end_callback=mx.callback.do_checkpoint(os.path.join(out, "ckpt-r%d" % rank)))
    arg, aux = mod.get_params()
    result = {k: v.asnumpy() for k, v in arg.items()}
    result["workers"] = workers
    result["rescale_grad"] = mod._optimizer.rescale_grad
    result["steps"] = mod._optimizer.num_update
    kv = mod._kvstore
    if kv is not None and hasattr(kv, "stats"):
        result["allreduce_calls"] = kv.stats["allreduce_calls"]
    if kvstore != "local":
        np.savez(os.path.join(out, "params-rank%d.npz" % rank), **result)
    return result


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
