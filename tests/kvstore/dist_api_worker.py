"""The dist kvstore's API across ranks; every check runs in every rank (run with 2 or 3).

    python -m minimod.launch -n 3 -- python tests/kvstore/dist_api_worker.py OUT

A failed check raises, which ends the whole job with the rank named; at the end each rank
writes OUT/ok-rank<r>.
"""
import os
import sys
import time

import numpy as np

import minimod as mx
from minimod.kvstore.compression import TwoBitCompression


def gather(kv, arr):
    """Every rank's copy of `arr` (a NumPy array), through mpi4py."""
    return kv._comm.allgather(np.asarray(arr))


def check_store(kind: str, out: str) -> None:
    kv = mx.kv.create(kind)
    rank, n = kv.rank, kv.num_workers
    assert kv.type == kind and n >= 2, (kv.type, n)
    assert sorted(gather(kv, rank).__iter__()) == list(range(n))
    ranks_sum = n * (n + 1) // 2            # sum of (rank + 1) over ranks
    devs = [mx.cpu(0), mx.cpu(1)]

    # init: every rank ends with rank 0's value, whatever it passed
    kv.init("w", mx.nd.full((2, 3), rank + 1.0, ctx=devs[1]))
    outs = [mx.nd.zeros((2, 3), ctx=d) for d in devs]
    kv.pull("w", out=outs)
    for o in outs:
        assert (o.asnumpy() == 1.0).all(), o.asnumpy()
    if kind == "dist_device_sync":
        assert kv._store["w"].context == devs[1]  # kept on the device it came from

    # push sums over every rank and every device; without an updater it replaces the value
    kv.push("w", [mx.nd.full((2, 3), rank + 1.0, ctx=devs[0]),
                  mx.nd.full((2, 3), 10.0 * (rank + 1), ctx=devs[1])])
    kv.pull("w", out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 3), 11.0 * ranks_sum))

    # a list of keys of two dtypes: one allreduce per dtype, whatever the number of keys
    keys = ["a", "b", "c"]
    vals = [mx.nd.zeros((4,)), mx.nd.zeros((2, 2), dtype=np.float64), mx.nd.zeros((3,))]
    kv.init(keys, vals)
    before = dict(kv.stats)
    grads = [mx.nd.array(np.arange(4) * (rank + 1)),
             mx.nd.array(np.full((2, 2), 0.5 * (rank + 1)), dtype=np.float64),
             mx.nd.array(np.ones(3) * rank)]
    outs3 = [mx.nd.zeros((4,)), mx.nd.zeros((2, 2), dtype=np.float64), mx.nd.zeros((3,))]
    kv.pushpull(keys, grads, out=outs3)
    assert kv.stats["allreduce_calls"] - before["allreduce_calls"] == 2, kv.stats
    assert kv.stats["allreduce_bytes"] - before["allreduce_bytes"] == 7 * 4 + 4 * 8, kv.stats
    np.testing.assert_array_equal(outs3[0].asnumpy(), np.arange(4) * ranks_sum)
    assert outs3[1].dtype == np.float64
    np.testing.assert_array_equal(outs3[1].asnumpy(), np.full((2, 2), 0.5 * ranks_sum))
    np.testing.assert_array_equal(outs3[2].asnumpy(), np.full(3, n * (n - 1) / 2))
    # dist_device_sync stages its device buffers through host memory (no CUDA-aware MPI
    # here); dist_sync sums in host memory directly
    groups = [g for plan in kv._plans.values() for g in plan]
    assert groups and all(g.staged == (kind == "dist_device_sync") for g in groups)
    # the same list again reuses the buffers (no new layout exchange)
    plans = len(kv._plans)
    kv.pushpull(keys, grads, out=outs3)
    assert len(kv._plans) == plans

    # set_optimizer: every replica applies the same update to the summed gradients; the
    # result matches one store fed the sums, bit for bit, on every rank
    opt = dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=1.0 / n)
    kv.set_optimizer(mx.optimizer.SGD(**opt))
    ref = mx.kv.create("local")
    ref.set_optimizer(mx.optimizer.SGD(**opt))
    start = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    kv.init("p", mx.nd.array(start + rank))       # rank 0's value wins
    ref.init("p", mx.nd.array(start))
    for step in range(3):
        mine = np.sin(np.arange(6).reshape(2, 3) + step + 7 * rank).astype(np.float32)
        every = gather(kv, mine)
        kv.push("p", mx.nd.array(mine))
        summed = every[0].copy()
        for other in every[1:]:
            summed += other
        ref.push("p", mx.nd.array(summed))
    got, want = mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))
    kv.pull("p", out=got)
    ref.pull("p", out=want)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-7)
    for other in gather(kv, got.asnumpy()):
        np.testing.assert_array_equal(other, got.asnumpy())  # replicas identical

    # save_optimizer_states: rank 0 writes, every rank returns once the file is there
    fname = os.path.join(out, "%s.states" % kind)
    kv.save_optimizer_states(fname)
    assert os.path.exists(fname)
    kv.load_optimizer_states(fname)

    # barrier: nobody passes it before rank 0 has written its file
    flag = os.path.join(out, "%s.flag" % kind)
    if rank == 0:
        time.sleep(0.3)
        with open(flag, "w") as f:
            f.write("x")
    kv.barrier()
    assert os.path.exists(flag)

    # the workers must agree on the keys they push: a mismatch is an error on every rank
    bad = mx.kv.create(kind)
    try:
        bad.init("only" if rank != n - 1 else "other", mx.nd.zeros((2,)))
    except mx.MXNetError as err:
        assert "rank %d" % (n - 1) in str(err) and "same keys" in str(err), str(err)
        if rank == 0:
            print("mismatch error:", err, flush=True)
    else:
        raise AssertionError("init with different keys on different ranks did not fail")
    try:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1 * (rank + 1)))
    except mx.MXNetError as err:
        assert "rank 1" in str(err) and "lr" in str(err), str(err)
        if rank == 0:
            print("optimizer error:", err, flush=True)
    else:
        raise AssertionError("set_optimizer with different settings did not fail")


def check_compression() -> None:
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("g", mx.nd.zeros((5,)))
    local = TwoBitCompression(0.5)
    expected = np.zeros(5, dtype=np.float32)
    out = mx.nd.zeros((5,))
    for step in range(3):
        mine = (np.array([0.3, 0.6, -0.7, 0.1, -0.2]) * (rank + 1 + step)).astype(np.float32)
        kv.push("g", mx.nd.array(mine))
        kv.pull("g", out=out)
        quantised = [local.compress(np, "g", r, (np.array([0.3, 0.6, -0.7, 0.1, -0.2]) *
                                                 (r + 1 + step)).astype(np.float32))
                     for r in range(n)]
        expected = sum(quantised)
        np.testing.assert_array_equal(out.asnumpy(), expected)


def check_allreduce() -> None:
    """A worker's devices and all workers summed in one allreduce, the sum in every array."""
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    grads = [mx.nd.full((7,), rank + 1.0 + d, ctx=mx.cpu(d)) for d in (0, 1)]
    before = kv.stats["allreduce_calls"]
    kv.allreduce(["a", "b"], grads)
    assert kv.stats["allreduce_calls"] == before + 1
    want = sum(2 * (r + 1.0) + 1 for r in range(n))
    for grad in grads:
        np.testing.assert_array_equal(grad.asnumpy(), np.full(7, want, dtype=np.float32))


def main(out: str) -> None:
    rank = mx.kv.create("dist_sync").rank
    for kind in ("dist_sync", "dist_device_sync"):
        check_store(kind, out)
    check_compression()
    check_allreduce()
    try:
        mx.kv.create("dist_async")
    except mx.MXNetError as err:
        assert "dist_sync" in str(err), str(err)
    else:
        raise AssertionError("dist_async was accepted")
    with open(os.path.join(out, "ok-rank%d" % rank), "w") as f:
        f.write("ok")


if __name__ == "__main__":
    main(sys.argv[1])
