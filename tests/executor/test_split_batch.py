"""split_batch: contiguous slices covering the batch, proportional to the work loads."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minimod.executor.batches import split_batch


@given(st.integers(1, 500), st.lists(st.integers(1, 9), min_size=1, max_size=6))
def test_slices_are_contiguous_cover_the_batch_and_are_proportional(batch, loads):
    if batch < len(loads):
        with pytest.raises(ValueError, match="empty"):
            split_batch(batch, loads)
        return
    try:
        slices = split_batch(batch, loads)
    except ValueError:  # MXNet refuses too (checked: split_batch(4, [1, 1, 2, 1]) below)
        counts = [round(w * batch / sum(loads)) for w in loads]
        # a small share rounded to nothing, or shares rounded up past the batch leave a
        # later device nothing
        assert 0 in counts or sum(counts) > batch
        return
    assert slices[0].start == 0 and slices[-1].stop == batch
    for a, b in zip(slices, slices[1:]):
        assert a.stop == b.start
    total = sum(loads)
    for s, w in zip(slices[:-1], loads[:-1]):
        assert abs((s.stop - s.start) - w * batch / total) <= 1  # within one sample


def test_mxnet_rounding_and_shortfall_to_the_last_device():
    assert split_batch(4, [1, 1]) == [slice(0, 2), slice(2, 4)]
    assert split_batch(8, [1, 2, 1]) == [slice(0, 2), slice(2, 6), slice(6, 8)]
    assert split_batch(7, [1, 1, 1]) == [slice(0, 2), slice(2, 4), slice(4, 7)]
    # shares rounded up (0.8 -> 1, 1.6 -> 2) use the whole batch before the last device
    with pytest.raises(ValueError, match="empty"):
        split_batch(4, [1, 1, 2, 1])
    assert split_batch(5, [1, 1, 2, 1]) == [slice(0, 1), slice(1, 2), slice(2, 4), slice(4, 5)]
