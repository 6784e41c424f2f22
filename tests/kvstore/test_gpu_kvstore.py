"""KVStore 'local', 'device' and 'nccl' over several devices: [cpu(0), cpu(1)] everywhere,
[cpu(0), gpu(0)] and [gpu(0), gpu(1)] where the GPUs exist. Also the device-independent choice
between NCCL and peer copies."""
import types

import numpy as np
import pytest

import minimod as mx
from minimod import flat as fast
from minimod.executor.flat_params import FlatParams
from minimod.kvstore import nccl

from ..conftest import GPU_TOLERANCES, needs_gpu, needs_two_gpus

DEVICE_SETS = [
    pytest.param((mx.cpu(0), mx.cpu(1)), id="cpu0-cpu1"),
    pytest.param((mx.cpu(0), mx.gpu(0)), id="cpu0-gpu0", marks=needs_gpu),
    pytest.param((mx.gpu(0), mx.gpu(1)), id="gpu0-gpu1", marks=needs_two_gpus),
]
KINDS = ["local", "device", "nccl"]


def _values(contexts, shape=(3, 4), seed=0):
    rng = np.random.RandomState(seed)
    host = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in contexts]
    return host, [mx.nd.array(h, ctx=c) for h, c in zip(host, contexts)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("contexts", DEVICE_SETS)
def test_push_sums_and_pull_broadcasts(kind, contexts):
    kv = mx.kv.create(kind)
    assert kv.type == kind
    host, values = _values(contexts)
    kv.init("w", mx.nd.zeros((3, 4), ctx=contexts[0]))
    kv.push("w", values)
    outs = [mx.nd.zeros((3, 4), ctx=c) for c in contexts]
    kv.pull("w", out=outs)
    want = host[0] + host[1]
    for out, c in zip(outs, contexts):
        assert out.context == c
        np.testing.assert_allclose(out.asnumpy(), want, rtol=GPU_TOLERANCES["kvstore_sum"])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("contexts", DEVICE_SETS)
def test_allreduce_sums_every_device(kind, contexts):
    host, values = _values(contexts, shape=(10,), seed=1)
    kv = mx.kv.create(kind)
    kv.allreduce(["a", "b"], values)
    for value in values:
        np.testing.assert_allclose(value.asnumpy(), host[0] + host[1],
                                   rtol=GPU_TOLERANCES["kvstore_sum"])
    host, values = _values(contexts, shape=(10,), seed=2)
    total = mx.nd.zeros((10,), ctx=kv.home_of(contexts[0]))
    kv.sum_into(["a", "b"], values, total)
    np.testing.assert_allclose(total.asnumpy(), host[0] + host[1],
                               rtol=GPU_TOLERANCES["kvstore_sum"])


def test_stored_values_through_public_accessors():
    kv = mx.kv.create("local")
    assert kv.updater is None and kv.compression is None and "w" not in kv
    kv.init("w", mx.nd.array([1.0, 2.0]))
    assert "w" in kv and kv.stored("w").asnumpy().tolist() == [1.0, 2.0]
    buffer = mx.nd.zeros((3,))
    kv.keep_in("w", buffer[1:])
    assert kv.stored("w") is not None and buffer.asnumpy().tolist() == [0.0, 1.0, 2.0]
    kv.push("w", mx.nd.array([5.0, 6.0]))
    assert buffer.asnumpy().tolist() == [0.0, 5.0, 6.0]
    with pytest.raises(mx.MXNetError, match="shape"):
        kv.keep_in("w", mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match="not been initialized"):
        kv.stored("v")
    kv.set_optimizer(mx.optimizer.SGD())
    assert isinstance(kv.updater, mx.optimizer.Updater)


@pytest.mark.parametrize("kind", ["device", "nccl"])
@pytest.mark.parametrize("contexts", DEVICE_SETS)
def test_store_updates_on_the_first_device(kind, contexts):
    kv = mx.kv.create(kind)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    kv.init(3, mx.nd.ones((2, 2), ctx=contexts[0]))
    kv.push(3, [mx.nd.ones((2, 2), ctx=c) for c in contexts])
    out = mx.nd.zeros((2, 2), ctx=contexts[-1])
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), 1 - 0.5 * len(contexts), rtol=1e-6)


# ---------------------------------------------------------------- device-independent logic

def test_nccl_chosen_only_for_distinct_gpus_when_available():
    two = [mx.gpu(0), mx.gpu(1)]
    assert nccl.reduce_method(two, nccl=True) == "nccl"
    assert nccl.reduce_method(two, nccl=False) == "peer"
    assert nccl.reduce_method([mx.cpu(0), mx.gpu(0)], nccl=True) == "peer"
    assert nccl.reduce_method([mx.cpu(0), mx.cpu(1)], nccl=True) == "peer"
    assert nccl.reduce_method([mx.gpu(0)], nccl=True) == "peer"
    assert nccl.reduce_method([mx.gpu(0), mx.gpu(0)], nccl=True) == "peer"


def test_nccl_availability_follows_the_backend():
    assert nccl.nccl_available() == (mx.backend.nccl_module() is not None)
    if mx.num_gpus() == 0:
        assert not nccl.nccl_available()
        assert nccl.reduce_method([mx.gpu(0), mx.gpu(1)]) == "peer"
        with pytest.raises(mx.MXNetError, match="NCCL is not available"):
            nccl.NCCLReducer([0, 1])


def test_nccl_store_without_nccl_takes_the_peer_path(monkeypatch):
    """An 'nccl' store whose NCCL is unusable sums by copies, like 'device'."""
    monkeypatch.setattr(nccl, "nccl_available", lambda: False)
    contexts = (mx.cpu(0), mx.cpu(1))
    kv = mx.kv.create("nccl")
    assert kv._nccl_reducer([mx.nd.zeros((1,), ctx=c) for c in contexts]) is None
    host, values = _values(contexts, seed=3)
    kv.init("k", mx.nd.zeros((3, 4)))
    kv.push("k", values)
    out = mx.nd.zeros((3, 4), ctx=mx.cpu(1))
    kv.pull("k", out=out)
    np.testing.assert_array_equal(out.asnumpy(), host[0] + host[1])


# ---------------------------------------------------------------- NCCL calls, on a stand-in

class _FakeBuffer:
    """What NCCLReducer reads of a CuPy array, over a NumPy array of GPU `device_id`."""

    def __init__(self, array, device_id):
        self.array, self.device_id = array, device_id
        self.shape, self.dtype, self.size = array.shape, array.dtype, array.size
        self.flags = array.flags
        self.data = types.SimpleNamespace(ptr=array.ctypes.data)


def _fake_cupy_nccl(calls, by_ptr):
    """A stand-in for `cupy.cuda.nccl` (CuPy's signatures: `NcclCommunicator.initAll(list)`
    returns one communicator per device; module-level groupStart/groupEnd; per-communicator
    allReduce(sendbuf, recvbuf, count, datatype, op, stream)) and for the bits of `cupy` the
    reducer touches (`cuda.Device`, `cuda.get_current_stream`). groupEnd performs the sums."""
    current = [0]

    class Device:
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            self.prev, current[0] = current[0], self.i

        def __exit__(self, *exc):
            current[0] = self.prev

    xp = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=Device, get_current_stream=lambda: types.SimpleNamespace(ptr=1000 + current[0])))

    class Comm:
        def __init__(self, device_id):
            self.device_id = device_id

        def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
            calls.append(("allReduce", self.device_id, sendbuf == recvbuf, count, datatype, op,
                          stream, current[0]))

    def group_end():  # the grouped all-reduce runs here, over every registered buffer
        calls.append(("groupEnd",))
        total = sum(b.array.copy() for b in by_ptr.values())
        for b in by_ptr.values():
            b.array[...] = total

    def init_all(devices):
        if not isinstance(devices, (list, int)):
            raise ValueError('"devices" should be an int or a list of int.')
        calls.append(("initAll", list(devices)))
        return [Comm(d) for d in devices]

    fake = types.SimpleNamespace(
        NCCL_SUM=0, NCCL_FLOAT16=6, NCCL_FLOAT32=7, NCCL_FLOAT64=8, NCCL_INT32=2, NCCL_INT64=4,
        NCCL_INT8=0, NCCL_UINT8=1, available=True,
        NcclCommunicator=types.SimpleNamespace(initAll=init_all),
        groupStart=lambda: calls.append(("groupStart",)), groupEnd=group_end)
    return fake, xp


def test_nccl_reducer_drives_cupys_nccl_api_in_one_group(monkeypatch):
    calls, by_ptr = [], {}
    fake, xp = _fake_cupy_nccl(calls, by_ptr)
    monkeypatch.setattr(mx.backend, "nccl_module", lambda: fake)
    monkeypatch.setattr(mx.backend, "device_of", lambda buf: buf.device_id)
    monkeypatch.setattr(mx.backend, "array_module_of", lambda buf: xp)
    monkeypatch.setattr(nccl, "_REDUCERS", {})
    host = [np.arange(6, dtype=np.float32) * (k + 1) for k in range(2)]
    bufs = [_FakeBuffer(h.copy(), device_id=d) for h, d in zip(host, (0, 1))]
    by_ptr.update({b.data.ptr: b for b in bufs})
    reducer = nccl.get_reducer([mx.gpu(0), mx.gpu(1)])
    assert nccl.get_reducer([mx.gpu(0), mx.gpu(1)]) is reducer  # communicators made once
    reducer.allreduce(bufs)
    assert calls[0] == ("initAll", [0, 1]) and calls.count(("initAll", [0, 1])) == 1
    assert [c[0] for c in calls[1:]] == ["groupStart", "allReduce", "allReduce", "groupEnd"]
    for (_, dev, in_place, count, dtype, op, stream, current), want_dev in zip(
            calls[2:4], (0, 1)):
        # in place, the whole buffer, float32 sum, on that GPU's current stream, inside its
        # Device scope
        assert (dev, in_place, count, dtype, op) == (want_dev, True, 6, fake.NCCL_FLOAT32,
                                                     fake.NCCL_SUM)
        assert stream == 1000 + want_dev and current == want_dev
    for b in bufs:
        np.testing.assert_array_equal(b.array, host[0] + host[1])
    # buffers that NCCL cannot take are refused with the reason
    with pytest.raises(mx.MXNetError, match="buffer 1 is on gpu\\(0\\)"):
        reducer.allreduce([bufs[0], _FakeBuffer(host[1].copy(), device_id=0)])
    with pytest.raises(mx.MXNetError, match="dtype complex64"):
        reducer.allreduce([_FakeBuffer(np.zeros(2, np.complex64), d) for d in (0, 1)])
    with pytest.raises(mx.MXNetError, match="2 GPUs"):
        reducer.allreduce(bufs[:1])


@pytest.mark.parametrize("method", ["allreduce", "pushpull"])
def test_nccl_store_hands_every_device_buffer_to_the_reducer(monkeypatch, method):
    """An 'nccl' store whose reducer applies sums the gradients through it alone (no copy-based
    sum on top), and the flat update on the store still updates and broadcasts the weights."""
    seen = []

    class Reducer:
        def allreduce(self, grads):
            seen.append(len(grads))
            total = sum(g.copy() for g in grads)
            for g in grads:
                g[...] = total

    monkeypatch.setattr(nccl, "reduce_method", lambda contexts: "nccl")
    monkeypatch.setattr(nccl, "get_reducer", lambda contexts: Reducer())
    contexts = (mx.cpu(0), mx.cpu(1))
    shapes = [(2, 3), (4,)]
    flats = [FlatParams(["a", "b"], shapes, np.float32, c, [True, True]) for c in contexts]
    rng = np.random.RandomState(2)
    grads = [rng.uniform(-1, 1, f.grad.shape).astype(np.float32) for f in flats]
    for f, g in zip(flats, grads):
        f.grad[...] = g
        f.weight[...] = 1.0
    kv = mx.kv.create("nccl")
    buffer = fast.SharedBuffer(("a", "b"), tuple(flats),
                               tuple(mx.nd.NDArray(f.grad, f.ctx) for f in flats))
    if method == "allreduce":
        kv.allreduce(buffer.names, list(buffer.grads))
        for f in flats:
            np.testing.assert_allclose(f.grad, grads[0] + grads[1], rtol=1e-6)
    else:
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
        for name, view in flats[0].weights.items():
            kv.init(name, view)
        fast.update._pushpull(kv, kv.updater, buffer)
        for f in flats:
            np.testing.assert_allclose(f.weight, 1.0 - 0.5 * (grads[0] + grads[1]), rtol=1e-6)
    assert seen == [2]
