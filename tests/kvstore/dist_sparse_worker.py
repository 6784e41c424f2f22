"""One worker of the dist_sync test of sparse_grad embeddings: Module training on its shard,
then its table.

    python -m minimod.launch -n 2 -- python tests/kvstore/dist_sparse_worker.py OUT KVSTORE OPT

Every worker takes batches of 4 rows of token ids from its shard, and the two shards look up
two disjoint halves of the table; KVSTORE 'local' is the single-process reference that takes
the workers' batches together. OPT 'sgd' (momentum and weight decay) or 'adam': both lazy.
"""
import os
import sys

import numpy as np

import minimod as mx

PER_WORKER = 4
SAMPLES = 16
VOCAB = 30
OPTIMIZERS = {"sgd": {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.05},
              "adam": {"learning_rate": 0.05}}


def data():
    rng = np.random.RandomState(0)
    ids = rng.randint(0, VOCAB // 2, (SAMPLES, 3))
    ids[SAMPLES // 2:] += VOCAB // 2  # the second shard looks up the upper half of the table
    return ids.astype(np.float32), rng.uniform(0, 1, (SAMPLES, 2)).astype(np.float32)


def train(out: str, kvstore: str, opt_name: str, as_workers: int = 1) -> dict:
    if kvstore == "local":
        rank, workers, batch = 0, 1, PER_WORKER * as_workers
    else:
        probe = mx.kv.create(kvstore)
        rank, workers, batch = probe.rank, probe.num_workers, PER_WORKER
    x, y = data()
    train_iter = mx.io.NDArrayIter(x, y, batch_size=batch, num_parts=workers, part_index=rank,
                                   label_name="lro_label")
    emb = mx.sym.Embedding(mx.sym.var("data"), input_dim=VOCAB, output_dim=2,
                           sparse_grad=True, name="emb")
    net = mx.sym.LinearRegressionOutput(mx.sym.sum(emb, axis=1), name="lro")
    mod = mx.mod.Module(net, label_names=["lro_label"])
    mx.random.seed(rank)  # the store hands out rank 0's initial table
    mod.fit(train_iter, num_epoch=2, kvstore=kvstore, optimizer=opt_name,
            optimizer_params=OPTIMIZERS[opt_name], initializer=mx.init.Uniform(0.5))
    table = mod.get_params()[0]["emb_weight"].asnumpy()
    if kvstore != "local":
        np.save(os.path.join(out, "table-rank%d.npy" % rank), table)
    return table


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], sys.argv[3])
