"""Row-sparse values in a dist_sync store across ranks (run with 2 or 3); each rank checks
every result against what one store would hold for all the ranks' pushes together.

    python -m minimod.launch -n 2 -- python tests/kvstore/dist_rsp_worker.py OUT

A failed check raises, which ends the whole job with the rank named; at the end each rank
writes OUT/ok-rank<r>.
"""
import os
import sys

import numpy as np

import minimod as mx

ROWS, COLS = 8, 3


def pushed(rank: int, step: int) -> np.ndarray:
    """The dense value of rank `rank`'s push at `step`: rows rank + step and 5 (shared)."""
    dense = np.zeros((ROWS, COLS), np.float32)
    dense[(rank + step) % ROWS] = rank + 1.0
    dense[5] = 0.5 * (step + 1)
    return dense


def main(out: str) -> None:
    kv = mx.kv.create("dist_sync")
    rank, n = kv.rank, kv.num_workers
    start = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) * (rank + 1)
    start[1] = 0  # a row rank 0 does not store
    kv.init("w", mx.nd.array(start).tostype("row_sparse"))
    kv.init("s", mx.nd.array(start).tostype("row_sparse"))
    want = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    want[1] = 0
    out_rsp = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
    kv.row_sparse_pull("w", out=out_rsp, row_ids=mx.nd.arange(ROWS, dtype="int64"))
    np.testing.assert_array_equal(out_rsp.asnumpy(), want)  # rank 0's, on every rank

    # without an updater a push stores the sum over ranks (and devices) on the union of rows
    kv.push("s", [mx.nd.array(pushed(rank, 0)).tostype("row_sparse"),
                  mx.nd.array(pushed(rank, 0), ctx=mx.cpu(1)).tostype("row_sparse")])
    total = sum(2 * pushed(r, 0) for r in range(n))
    kv.row_sparse_pull("s", out=out_rsp, row_ids=mx.nd.arange(ROWS, dtype="int64"))
    np.testing.assert_array_equal(out_rsp.asnumpy(), total)
    stored_rows = kv._store["s"].indices.asnumpy().tolist()
    assert stored_rows == sorted({r % ROWS for r in range(n)} | {5}), stored_rows

    # with SGD (momentum, wd) every replica updates only the union of the pushed rows,
    # exactly as one local store given every rank's pushes of each step
    opt = dict(learning_rate=0.1, momentum=0.9, wd=0.01)
    kv.set_optimizer(mx.optimizer.SGD(**opt))
    ref = mx.kv.create("local")
    ref.init("w", mx.nd.array(want).tostype("row_sparse"))
    ref.set_optimizer(mx.optimizer.SGD(**opt))
    for step in range(3):
        kv.push("w", mx.nd.array(pushed(rank, step)).tostype("row_sparse"))
        ref.push("w", [mx.nd.array(pushed(r, step)).tostype("row_sparse") for r in range(n)])
    got = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
    kv.row_sparse_pull("w", out=got, row_ids=mx.nd.array([0, 3, 5, 7], dtype="int64"))
    expect = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
    ref.row_sparse_pull("w", out=expect, row_ids=mx.nd.array([0, 3, 5, 7], dtype="int64"))
    np.testing.assert_allclose(got.asnumpy(), expect.asnumpy(), rtol=1e-6)
    untouched = [r for r in range(ROWS) if r not in {(k + s) % ROWS for k in range(n)
                                                      for s in range(3)} | {5}]
    full = mx.nd.sparse.zeros("row_sparse", (ROWS, COLS))
    kv.row_sparse_pull("w", out=full, row_ids=mx.nd.arange(ROWS, dtype="int64"))
    np.testing.assert_array_equal(full.asnumpy()[untouched], want[untouched])
    replicas = kv._comm.allgather(full.asnumpy())
    for other in replicas:
        np.testing.assert_array_equal(other, replicas[0])

    try:
        kv.push("w", mx.nd.array(pushed(rank, 0)).tostype("csr"))
    except mx.MXNetError as err:
        assert "not csr" in str(err), err
    else:
        raise AssertionError("a csr push was taken")
    kv.barrier()
    open(os.path.join(out, "ok-rank%d" % rank), "w").close()


if __name__ == "__main__":
    main(sys.argv[1])
