"""mx.engine: the bulk size is set, scoped and returned as MXNet 1.9.1 returns it (0 at the
start), and changes no result."""
import numpy as np
import pytest

import minimod as mx


def test_bulk_size_is_returned_and_scoped():
    start = mx.engine.set_bulk_size(5)
    try:
        assert mx.engine.set_bulk_size(7) == 5
        with mx.engine.bulk(3) as scope:
            assert scope is not None and mx.engine.set_bulk_size(3) == 3
        assert mx.engine.set_bulk_size(7) == 7
    finally:
        mx.engine.set_bulk_size(start)


def test_results_are_unchanged_in_a_bulk():
    x = mx.nd.zeros((1,))
    with mx.engine.bulk(10):
        for _ in range(100):
            x += 1
    assert x.asnumpy().tolist() == [100.0]
    np.testing.assert_array_equal(x.asnumpy(), np.array([100.0], np.float32))


def test_bad_size():
    with pytest.raises(ValueError, match="non-negative int"):
        mx.engine.set_bulk_size(-1)
