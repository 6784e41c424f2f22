"""The KVStore API: init/push/pull/pushpull/broadcast, list values, str and int keys,
set_optimizer, and 'device' with 2bit gradient compression."""
import numpy as np


def run(mx):
    out = {}
    rng = np.random.RandomState(0)
    ctxs = [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    kv = mx.kv.create("local")
    out["type"] = kv.type
    out["rank"] = kv.rank
    out["workers"] = kv.num_workers
    shape = (2, 3)
    kv.init(3, mx.nd.ones(shape))
    kv.init([5, 7], [mx.nd.zeros(shape), mx.nd.ones(shape) * 2])
    skv = mx.kv.create("local")  # one store takes int keys or str keys, not both
    skv.init("w", mx.nd.array(rng.rand(*shape)))
    vals = [mx.nd.array(rng.rand(*shape), ctx=c) for c in ctxs]
    kv.push(3, vals)
    got = [mx.nd.zeros(shape, ctx=c) for c in ctxs]
    kv.pull(3, out=got)
    out["push_sum"] = got[1].asnumpy()
    kv.push(3, vals[0])
    kv.pull(3, out=got[0])
    out["push_replaces"] = got[0].asnumpy()
    kv.push([5, 7], [[vals[0], vals[1]], vals[2]])
    a, b = mx.nd.zeros(shape), mx.nd.zeros(shape)
    kv.pull([5, 7], out=[a, b])
    out["multi_5"] = a.asnumpy()
    out["multi_7"] = b.asnumpy()
    grads = [mx.nd.array(rng.rand(*shape), ctx=c) for c in ctxs]
    skv.pushpull("w", grads)
    out["pushpull_inplace"] = grads[2].asnumpy()
    dst = [mx.nd.zeros(shape, ctx=c) for c in ctxs]
    skv.broadcast("b", mx.nd.array(rng.rand(*shape)), out=dst)
    out["broadcast"] = dst[1].asnumpy()
    # a fresh store for the optimizer: after a push without updater, MXNet's stored value
    # aliases its reduction buffer, so a later updater would see the next sum as the weight
    okv = mx.kv.create("local")
    okv.init("w", mx.nd.array(rng.rand(*shape)))
    okv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    weights = [mx.nd.zeros(shape, ctx=c) for c in ctxs]
    for step in range(3):
        g = [mx.nd.array(rng.rand(*shape), ctx=c) for c in ctxs]
        okv.pushpull("w", g, out=weights)
    out["optimizer_w"] = weights[0].asnumpy()
    dkv = mx.kv.create("device")
    dkv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    dkv.init("g", mx.nd.zeros((4, 5)))
    for step in range(4):
        g = [mx.nd.array(rng.uniform(-0.6, 0.6, (4, 5)), ctx=c) for c in ctxs[:2]]
        res = [mx.nd.zeros((4, 5), ctx=c) for c in ctxs[:2]]
        dkv.pushpull("g", g, out=res)
        out["2bit_step%d" % step] = res[0].asnumpy()
    return out
