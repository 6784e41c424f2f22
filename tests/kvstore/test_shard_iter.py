"""Data shards for distributed training: NDArrayIter(num_parts=, part_index=)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx
from minimod.io import DataIterError, shard_positions


@given(st.integers(1, 200), st.integers(1, 9))
def test_parts_are_equal_strided_and_cover_every_sample(n, parts):
    if parts > n:
        return
    shards = [shard_positions(n, parts, k) for k in range(parts)]
    per = -(-n // parts)
    assert all(len(s) == per for s in shards)            # same number of batches everywhere
    assert set(np.concatenate(shards).tolist()) == set(range(n))
    for k, s in enumerate(shards):
        head = s[: (n - k + parts - 1) // parts]          # before any wrap-around
        assert head.tolist() == list(range(k, n, parts))
    if n % parts == 0:
        assert sorted(np.concatenate(shards).tolist()) == list(range(n))  # disjoint


@pytest.mark.parametrize("parts", [2, 3, 4])
def test_workers_batches_together_are_the_single_process_batch(parts):
    n, per = 48, 4
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.float32)
    whole = [(b.data[0].asnumpy(), b.label[0].asnumpy())
             for b in mx.io.NDArrayIter(x, y, batch_size=per * parts)]
    shards = [[(b.data[0].asnumpy(), b.label[0].asnumpy())
               for b in mx.io.NDArrayIter(x, y, batch_size=per, num_parts=parts, part_index=k)]
              for k in range(parts)]
    assert all(len(s) == len(whole) for s in shards)
    for step, (wx, wy) in enumerate(whole):
        got_y = np.concatenate([s[step][1] for s in shards])
        got_x = np.concatenate([s[step][0] for s in shards])
        order = np.argsort(got_y)
        np.testing.assert_array_equal(got_y[order], wy)
        np.testing.assert_array_equal(got_x[order], wx)


def test_a_shard_pads_shuffles_and_resets_within_itself():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    it = mx.io.NDArrayIter(x, x[:, 0], batch_size=2, num_parts=4, part_index=3)
    assert it.num_data == 3                                # samples 3, 7 and 1 (wrapped)
    batches = [b for b in it]
    assert [b.label[0].asnumpy().tolist() for b in batches] == [[3.0, 7.0], [1.0, 3.0]]
    assert batches[-1].pad == 1
    np.random.seed(0)
    shuffled = mx.io.NDArrayIter(x, x[:, 0], batch_size=3, shuffle=True, num_parts=2,
                                 part_index=1)
    odd = {1.0, 3.0, 5.0, 7.0, 9.0}
    for _ in range(2):                                     # this epoch and the next
        seen = [v for b in shuffled for v in b.label[0].asnumpy().tolist()]
        assert len(seen) == 6 and set(seen) == odd         # 5 samples, padded to 2 batches
        shuffled.reset()


@pytest.mark.parametrize("kwargs,message", [
    ({"num_parts": 0}, "num_parts must be at least 1"),
    ({"num_parts": 2, "part_index": 2}, r"part_index must be in \[0, 2\)"),
    ({"num_parts": 2, "part_index": -1}, "part_index must be in"),
    ({"num_parts": 11}, "num_parts=11 is more than the 10 samples"),
    ({"num_parts": "two"}, "must be integers"),
])
def test_bad_parts_are_refused(kwargs, message):
    with pytest.raises(DataIterError, match=message):
        mx.io.NDArrayIter(np.zeros((10, 2)), batch_size=2, **kwargs)
