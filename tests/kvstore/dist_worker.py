"""One worker of the dist_sync test: trains on its shard and writes its final parameters.

    mpiexec -n 2 python tests/kvstore/dist_worker.py OUT_PREFIX KVSTORE
"""
import sys

import numpy as np

import minimod as mx


def main(out_prefix: str, kvstore: str) -> None:
    kv = mx.kv.create(kvstore)
    rank, workers = kv.rank, kv.num_workers
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (64, 6)).astype(np.float32)
    y = rng.randint(0, 3, 64).astype(np.float32)
    per = 16 // workers
    with mx.name.NameManager():
        net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8,
                                                      name="fc1"), act_type="tanh")
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"),
                                   name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[("data", (per, 6))], label_shapes=[("softmax_label", (per,))])
    # every rank starts from its own random init: the store must hand out rank 0's values
    mx.random.seed(rank)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=kv, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    for step in range(4):
        lo = step * 16 + rank * per
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[lo:lo + per])],
                                             [mx.nd.array(y[lo:lo + per])]))
        mod.update()
    arg, _ = mod.get_params()
    np.savez("%s-rank%d.npz" % (out_prefix, rank), workers=workers,
             **{k: v.asnumpy() for k, v in arg.items()})
    mod.save_optimizer_states("%s.states" % out_prefix)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
