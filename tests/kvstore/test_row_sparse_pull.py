"""The 'local' KVStore's row_sparse_pull: the dense view of MXNet's row-sparse result."""
import numpy as np
import pytest

import minimod as mx


def test_row_sparse_pull_gives_the_dense_view_of_the_rows_asked_for():
    """MXNet pulls the rows into row-sparse arrays; a dense out gets their dense view: those
    rows of the stored value and zeros elsewhere, whatever it held before."""
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.arange(12).reshape((4, 3)))
    out = mx.nd.ones((4, 3)) * -1
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([3, 1, 3]))
    want = np.zeros((4, 3))
    want[[1, 3]] = np.arange(12).reshape(4, 3)[[1, 3]]
    np.testing.assert_array_equal(out.asnumpy(), want)
    outs = [mx.nd.ones((4, 3)), mx.nd.ones((4, 3))]
    kv.row_sparse_pull("w", out=outs, row_ids=[mx.nd.array([0]), mx.nd.array([2])])
    assert outs[0].asnumpy()[0].tolist() == [0, 1, 2] and not outs[0].asnumpy()[1:].any()
    assert outs[1].asnumpy()[2].tolist() == [6, 7, 8] and not outs[1].asnumpy()[[0, 1, 3]].any()
    with pytest.raises(mx.base.MXNetError, match="2 row_ids for 3 out arrays"):
        kv.row_sparse_pull("w", out=[out] * 3, row_ids=[mx.nd.array([0])] * 2)
