"""NDArray indexing against NumPy's, on random keys: integers (negative too), slices with any
start, stop and step, lists of integers, None and Ellipsis, read (`a[key]`) and written
(`a[key] = scalar`, `a[key] = array`). NumPy is the rule, but for MXNet's one convention: a
result NumPy gives as a 0-d array is (1,) on an NDArray. A key NumPy refuses is refused.

HYPOTHESIS_PROFILE=fuzz runs 2000 keys per test instead of CI's few (tests/conftest.py)."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import minimod as mx


@st.composite
def shapes_and_keys(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    parts = []
    for dim in shape[:draw(st.integers(1, len(shape)))]:
        index = st.integers(-dim - 1, dim)  # one past each end: an IndexError both ways
        part = draw(st.one_of(
            index,
            st.builds(slice, st.none() | st.integers(-dim - 2, dim + 1),
                      st.none() | st.integers(-dim - 2, dim + 1),
                      st.none() | st.sampled_from([1, 2, 3, -1, -2])),
            st.lists(st.integers(-dim, dim - 1), min_size=1, max_size=3),
            st.none(),
            st.just(Ellipsis)))
        if part is Ellipsis and any(p is Ellipsis for p in parts):
            part = slice(None)
        parts.append(part)
    return shape, tuple(parts) if len(parts) > 1 else parts[0]


def _numpy(fn):
    try:
        return fn(), None
    except (IndexError, ValueError) as exc:
        return None, exc


@given(shapes_and_keys())
def test_reading_is_numpys(case):
    shape, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want, refused = _numpy(lambda: x[key])
    if refused is not None:
        try:
            mx.nd.array(x)[key]
        except (IndexError, ValueError, mx.base.MXNetError):
            return
        raise AssertionError("NumPy refuses %r on %s (%s); minimod did not" % (key, shape,
                                                                             refused))
    got = mx.nd.array(x)[key].asnumpy()
    np.testing.assert_array_equal(got, want.reshape(want.shape or (1,)))


@given(shapes_and_keys(), st.booleans())
def test_writing_is_numpys(case, array_value):
    shape, key = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    target, refused = _numpy(lambda: x[key])
    if refused is not None:
        return
    value = -np.arange(1, target.size + 1, dtype=np.float32).reshape(target.shape) \
        if array_value else -1.0
    a = mx.nd.array(x)
    a[key] = mx.nd.array(value.reshape(value.shape or (1,))) if array_value else value
    x[key] = value
    np.testing.assert_array_equal(a.asnumpy(), x)
