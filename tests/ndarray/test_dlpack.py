"""DLPack interchange (minimod/ndarray/dlpack.py): capsules out of NDArrays and NDArrays over
capsules or __dlpack__ producers, sharing memory both ways, as MXNet 1.9.1's
to_dlpack_for_read / to_dlpack_for_write / from_dlpack do. NumPy stands in for the other
framework (PyTorch, CuPy ... take the same capsules)."""
import gc
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError


def test_round_trip_through_a_capsule_shares_memory():
    a = mx.nd.arange(6).reshape((2, 3))
    capsule = mx.nd.to_dlpack_for_write(a)
    assert type(capsule).__name__ == "PyCapsule"
    b = mx.nd.from_dlpack(capsule)
    assert b.shape == (2, 3) and b.dtype == np.float32 and b.context == mx.cpu(0)
    b += 1  # MXNet's documented use: what the consumer writes, the producer holds
    np.testing.assert_array_equal(a.asnumpy(), np.arange(1, 7).reshape(2, 3))
    a[0, 0] = 50
    assert b.asnumpy()[0, 0] == 50


def test_a_capsule_is_consumed_once():
    capsule = mx.nd.to_dlpack_for_read(mx.nd.ones((2,)))
    mx.nd.from_dlpack(capsule)
    with pytest.raises(MXNetError, match="consumed only once"):
        mx.nd.from_dlpack(capsule)


def test_the_consumer_keeps_the_memory_alive():
    def imported():
        return mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(mx.nd.full((1000,), 3.0)))
    b = imported()
    gc.collect()
    clutter = [np.full(1000, 7.0) for _ in range(50)]  # would reuse freed memory
    assert b.asnumpy().sum() == 3000.0 and len(clutter) == 50


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "uint8", "int64"])
def test_other_producers_and_consumers(dtype):
    host = np.arange(12).reshape(3, 4).astype(dtype)[:, ::2]  # strided, not contiguous
    nd = mx.nd.from_dlpack(host)  # any object with __dlpack__
    assert nd.dtype == np.dtype(dtype) and nd.shape == (3, 2)
    nd += 1
    np.testing.assert_array_equal(host, (np.arange(12).reshape(3, 4)[:, ::2] + 1).astype(dtype))
    back = np.from_dlpack(nd)  # NDArray has __dlpack__ / __dlpack_device__
    back[0, 0] = 9
    assert nd.asnumpy()[0, 0] == 9 and host[0, 0] == 9


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="not int"):
        mx.nd.from_dlpack(3)
    with pytest.raises(TypeError, match="takes an NDArray, not ndarray"):
        mx.nd.to_dlpack_for_read(np.ones(2))


@pytest.mark.skipif(os.environ.get("MINIMOD_FAKE_CUPY") == "1",
                    reason="the stand-in's device arrays are NumPy's: their capsules say CPU")
def test_device_memory_stays_on_its_device(ctx):
    a = mx.nd.arange(4, ctx=ctx)
    b = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    assert b.context == ctx
    b += 1
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 3, 4])
