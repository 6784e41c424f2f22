"""Tests of minimod.io: DataDesc, DataBatch, NDArrayIter (against MXNet 1.9.1 golden batches),
ResizeIter and PrefetchingIter."""
from __future__ import annotations

import gc
import json
import os
import pickle
import threading

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError
from minimod.io import (
    DataBatch,
    DataDesc,
    DataIter,
    DataIterError,
    NDArrayIter,
    PrefetchingIter,
    ResizeIter,
)

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "io", "ndarrayiter_golden.json")


def _golden_cases():
    with open(GOLDEN) as f:
        return json.load(f)["cases"]


def _build(spec, as_ndarray):
    if spec is None:
        return None
    if isinstance(spec, list):
        return [_build(s, as_ndarray) for s in spec]
    if "values" not in spec:
        return {k: _build(v, as_ndarray) for k, v in spec.items()}
    arr = np.array(spec["values"], dtype=spec["dtype"])
    return mx.nd.array(arr, dtype=arr.dtype) if as_ndarray else arr


def _describe(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


def _record(batch):
    return {
        "data": [[np.dtype(d.dtype).name, d.asnumpy().tolist()] for d in batch.data],
        "label": [[np.dtype(d.dtype).name, d.asnumpy().tolist()] for d in batch.label],
        "pad": batch.pad,
        "index": None if batch.index is None else list(map(int, batch.index)),
    }


# ---------------------------------------------------------------------------------- golden

@pytest.mark.parametrize("case", _golden_cases(), ids=lambda c: c["name"])
def test_ndarrayiter_matches_mxnet(case):
    if "np_seed" in case:
        np.random.seed(case["np_seed"])
    as_nd = case.get("as_ndarray", False)
    it = NDArrayIter(_build(case["data"], as_nd), _build(case["label"], as_nd), **case["kwargs"])
    expected = case["result"]
    assert _describe(it.provide_data) == expected["provide_data"]
    assert _describe(it.provide_label) == expected["provide_label"]
    for step, want in zip(case["script"], expected["steps"]):
        if step == "epoch":
            got = [_record(b) for b in it]
            assert got == want["batches"], step
            assert it.idx.tolist() == want["idx"]
            assert _describe(it.provide_data) == want["provide_data"]
        elif step.startswith("take:"):
            got = [_record(it.next()) for _ in range(int(step[5:]))]
            assert got == want["batches"]
        else:
            getattr(it, step)()
        assert it.cursor == want["cursor"], step


def test_golden_covers_every_mode_over_several_epochs():
    cases = _golden_cases()
    for mode in ("pad", "discard", "roll_over"):
        multi = [c for c in cases if c["kwargs"].get("last_batch_handle", "pad") == mode
                 and c["script"].count("epoch") >= 2]
        assert multi, mode


# ---------------------------------------------------------------------------------- DataDesc

def test_datadesc_is_a_name_shape_tuple():
    desc = DataDesc("x", (1,), "float16", "NTC")
    assert desc == ("x", (1,))
    assert hash(desc) == hash(("x", (1,)))
    assert desc == DataDesc("x", (1,))
    name, shape = desc
    assert (name, shape, desc[1]) == ("x", (1,), (1,))
    assert (desc.dtype, desc.layout) == ("float16", "NTC")


def test_datadesc_repr_and_defaults():
    desc = DataDesc("data", (4, 4))
    assert repr(desc) == "DataDesc[data,(4, 4),<class 'numpy.float32'>,NCHW]"
    assert str(desc) == repr(desc)
    assert desc.dtype is np.float32 and desc.layout == "NCHW"


def test_datadesc_batch_axis_and_get_list():
    assert DataDesc.get_batch_axis(None) == 0
    assert DataDesc.get_batch_axis("NCHW") == 0
    assert DataDesc.get_batch_axis("TNC") == 1
    assert DataDesc.get_batch_axis("TC") == -1
    descs = DataDesc.get_list([("a", (1, 2)), ("b", (3,))], [("b", np.int32), ("a", np.float16)])
    assert [(d.name, d.shape, d.dtype) for d in descs] == [("a", (1, 2), np.float16),
                                                            ("b", (3,), np.int32)]
    assert all(d.dtype is np.float32 for d in DataDesc.get_list([("a", (1,))], None))


def test_datadesc_pickles_with_dtype_and_layout():
    desc = pickle.loads(pickle.dumps(DataDesc("x", (2, 3), np.int32, "NTC")))
    assert desc == ("x", (2, 3)) and desc.dtype is np.int32 and desc.layout == "NTC"


# ---------------------------------------------------------------------------------- DataBatch

def test_databatch_attributes_and_str():
    batch = DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1, index=np.arange(2),
                      bucket_key=5, provide_data=[DataDesc("data", (2, 3))])
    assert batch.pad == 1 and batch.bucket_key == 5 and batch.provide_label is None
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    assert str(DataBatch([mx.nd.zeros((2, 3))])) == \
        "DataBatch: data shapes: [(2, 3)] label shapes: None"


@pytest.mark.parametrize("field", ["data", "label"])
def test_databatch_rejects_a_bare_array(field):
    kwargs = {"data": [mx.nd.zeros((1,))], field: mx.nd.zeros((2,))}
    with pytest.raises(TypeError, match=f"{field} must be a list") as info:
        DataBatch(**kwargs)
    assert isinstance(info.value, MXNetError)


# ---------------------------------------------------------------------------------- DataIter

class _CountingIter(DataIter):
    def __init__(self, n):
        super().__init__(batch_size=2)
        self.n, self.i = n, 0

    def iter_next(self):
        self.i += 1
        return self.i <= self.n

    def getdata(self):
        return [mx.nd.full((2,), self.i)]

    def getlabel(self):
        return [mx.nd.zeros((2,))]

    def getpad(self):
        return 0

    def reset(self):
        self.i = 0


def test_dataiter_protocol_builds_batches():
    it = _CountingIter(3)
    assert iter(it) is it
    values = [b.data[0].asnumpy()[0] for b in it]
    assert values == [1, 2, 3]
    with pytest.raises(StopIteration):
        next(it)
    it.reset()
    batch = it.next()
    assert batch.pad == 0 and batch.index is None and batch.label[0].shape == (2,)


def test_dataiter_base_is_empty():
    it = DataIter(batch_size=4)
    assert it.batch_size == 4 and list(it) == []
    assert it.getindex() is None


# ---------------------------------------------------------------------------------- NDArrayIter

def test_ndarrayiter_list_and_dict_names():
    it = NDArrayIter([np.zeros((5, 2)), np.ones((5, 3))], [np.zeros((5,))], batch_size=2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    assert [d.name for d in it.provide_label] == ["softmax_label"]
    it = NDArrayIter(np.zeros((5, 2)), [np.zeros(5), np.zeros(5)], batch_size=2,
                     label_name="lbl")
    assert [d.name for d in it.provide_label] == ["_0_lbl", "_1_lbl"]
    it = NDArrayIter({"b": np.zeros((5, 2)), "a": np.ones((5, 1))}, batch_size=2)
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert it.provide_label == []
    batch = it.next()
    assert batch.data[0].shape == (2, 1) and batch.data[1].shape == (2, 2)
    assert batch.label == []


def test_ndarrayiter_many_list_inputs_sort_by_name_as_strings():
    arrays = [np.full((3, 1), i) for i in range(11)]
    it = NDArrayIter(arrays, batch_size=3)
    names = [d.name for d in it.provide_data]
    assert names[:4] == ["_0_data", "_10_data", "_1_data", "_2_data"]
    assert it.next().data[1].asnumpy()[0, 0] == 10


def test_ndarrayiter_provide_dtypes_and_layout():
    it = NDArrayIter({"f64": np.zeros((4, 2)), "i64": np.zeros((4,), np.int64),
                      "nd16": mx.nd.zeros((4, 3), dtype="float16"),
                      "ndi32": mx.nd.zeros((4,), dtype="int32")},
                     label=mx.nd.zeros((4,), dtype="float64"), batch_size=2, layout="NTC")
    got = {d.name: (d.shape, d.dtype, d.layout) for d in it.provide_data + it.provide_label}
    assert got == {"f64": ((2, 2), np.float32, "NTC"), "i64": ((2,), np.float32, "NTC"),
                   "nd16": ((2, 3), np.float16, "NTC"), "ndi32": ((2,), np.int32, "NTC"),
                   "softmax_label": ((2,), np.float64, "NTC")}
    batch = it.next()
    assert [d.dtype for d in batch.data] == [np.float32, np.float32, np.float16, np.int32]


def test_ndarrayiter_shuffle_makes_float32_like_mxnet():
    np.random.seed(0)
    it = NDArrayIter(mx.nd.array(np.arange(6), dtype="int32"), batch_size=2, shuffle=True)
    assert it.provide_data[0].dtype is np.float32
    assert sorted(np.concatenate([b.data[0].asnumpy() for b in it]).tolist()) == list(range(6))


def test_ndarrayiter_shuffle_uses_global_numpy_random():
    data = np.arange(8).reshape(8, 1)

    def first_epoch(seed):
        np.random.seed(seed)
        it = NDArrayIter(data, np.arange(8), batch_size=4, shuffle=True)
        batches = list(it)
        return np.concatenate([b.data[0].asnumpy() for b in batches]).ravel(), batches, it

    order, batches, it = first_epoch(7)
    np.random.seed(7)
    expected = np.arange(8)
    np.random.shuffle(expected)
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(it.idx, expected)
    # labels move with their samples
    for batch in batches:
        np.testing.assert_array_equal(batch.data[0].asnumpy().ravel(), batch.label[0].asnumpy())
    np.testing.assert_array_equal(first_epoch(7)[0], order)
    assert not np.array_equal(first_epoch(8)[0], order)
    # every reset reshuffles
    it.reset()
    second = np.concatenate([b.data[0].asnumpy() for b in it]).ravel()
    assert sorted(second.tolist()) == list(range(8))


def test_ndarrayiter_attributes():
    it = NDArrayIter(np.zeros((7, 2)), np.zeros(7), batch_size=3)
    assert it.num_data == 7 and it.cursor == -3 and it.batch_size == 3
    np.testing.assert_array_equal(it.idx, np.arange(7))
    assert it.num_source == 2 and len(it.data_list) == 2
    assert it.data[0][0] == "data" and isinstance(it.data[0][1], mx.nd.NDArray)
    assert it.iter_next() and it.cursor == 0
    assert it.getdata()[0].shape == (3, 2) and it.getpad() == 0 and it.getindex() is None


def test_ndarrayiter_pad_wraps_and_reports_pad():
    it = NDArrayIter(np.arange(5), np.arange(5) * 10, batch_size=4)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 3]
    np.testing.assert_array_equal(batches[1].data[0].asnumpy(), [4, 0, 1, 2])
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), [40, 0, 10, 20])


@pytest.mark.parametrize("mode", ["pad", "discard", "roll_over"])
def test_ndarrayiter_two_epochs_per_mode(mode):
    it = NDArrayIter(np.arange(7), batch_size=3, last_batch_handle=mode)
    first = [b.data[0].asnumpy().tolist() for b in it]
    it.reset()
    second = [(b.data[0].asnumpy().tolist(), b.pad) for b in it]
    if mode == "pad":
        assert first == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]
        assert second == [([0, 1, 2], 0), ([3, 4, 5], 0), ([6, 0, 1], 2)]
    elif mode == "discard":
        assert first == [[0, 1, 2], [3, 4, 5]]
        assert second == [([0, 1, 2], 0), ([3, 4, 5], 0)]
    else:
        assert first == [[0, 1, 2], [3, 4, 5]]
        assert second == [([6, 0, 1], 1), ([2, 3, 4], 0)]
        it.hard_reset()
        assert [b.data[0].asnumpy().tolist() for b in it] == first


def test_ndarrayiter_batches_are_copies():
    source = mx.nd.array(np.arange(6).reshape(3, 2))
    it = NDArrayIter(source, batch_size=2)
    batch = it.next()
    batch.data[0][:] = -1
    assert source.asnumpy().min() == 0


def test_ndarrayiter_exhausted_then_next_again():
    it = NDArrayIter(np.arange(4), batch_size=2)
    assert len(list(it)) == 2
    with pytest.raises(StopIteration):
        it.next()


def test_ndarrayiter_large_batch_is_vectorised():
    data = np.random.rand(20000, 8).astype(np.float32)
    it = NDArrayIter(data, np.arange(20000), batch_size=3000)
    batches = list(it)
    assert len(batches) == 7 and batches[-1].pad == 1000
    np.testing.assert_array_equal(batches[-1].data[0].asnumpy()[-1000:], data[:1000])


def test_ndarrayiter_errors():
    with pytest.raises(DataIterError, match="no samples"):
        NDArrayIter(np.zeros((0, 3)), batch_size=2)
    with pytest.raises(DataIterError, match="at least one data"):
        NDArrayIter(None)
    with pytest.raises(DataIterError, match="at least one data"):
        NDArrayIter({})
    with pytest.raises(TypeError, match="data must be"):
        NDArrayIter((np.zeros(3),))
    with pytest.raises(DataIterError, match="last_batch_handle"):
        NDArrayIter(np.zeros(3), last_batch_handle="wrap")
    with pytest.raises(DataIterError, match="batch_size"):
        NDArrayIter(np.zeros(3), batch_size=0)
    with pytest.raises(DataIterError, match="'softmax_label' has 2 samples"):
        NDArrayIter(np.zeros((3, 1)), np.zeros(2))
    with pytest.raises(TypeError, match="'x'"):
        NDArrayIter({"x": object()})
    with pytest.raises(MXNetError, match="scalar"):
        NDArrayIter({"x": np.float32(3)})


def test_ndarrayiter_roll_over_without_cache_is_a_clear_error():
    it = NDArrayIter(np.arange(5), batch_size=2, last_batch_handle="roll_over")
    it.next()
    it.next()
    assert it.iter_next()  # the short batch, never fetched through next()
    it.reset()
    with pytest.raises(DataIterError, match="roll over"):
        it.next()


# ---------------------------------------------------------------------------------- ResizeIter

def test_resizeiter_fixed_batches_and_restarts_inner():
    inner = NDArrayIter(np.arange(6), np.arange(6), batch_size=2)
    it = ResizeIter(inner, 5)
    assert it.batch_size == 2 and it.provide_data == inner.provide_data
    assert it.provide_label == inner.provide_label
    values = [b.data[0].asnumpy().tolist() for b in it]
    assert values == [[0, 1], [2, 3], [4, 5], [0, 1], [2, 3]]
    it.reset()
    assert [b.data[0].asnumpy().tolist() for b in it][0] == [0, 1]


def test_resizeiter_without_internal_reset_continues():
    inner = NDArrayIter(np.arange(6), batch_size=2)
    it = ResizeIter(inner, 2, reset_internal=False)
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0, 1], [2, 3]]
    it.reset()
    assert [b.data[0].asnumpy().tolist() for b in it] == [[4, 5], [0, 1]]


def test_resizeiter_keeps_bucket_information():
    class Bucketed(_CountingIter):
        default_bucket_key = 10
        provide_data = [DataDesc("data", (2,))]
        provide_label = [DataDesc("softmax_label", (2,))]

        def next(self):
            if not self.iter_next():
                raise StopIteration
            return DataBatch(self.getdata(), self.getlabel(), pad=0, bucket_key=self.i,
                             provide_data=self.provide_data)

    it = ResizeIter(Bucketed(2), 3)
    assert it.default_bucket_key == 10
    batches = list(it)
    assert [b.bucket_key for b in batches] == [1, 2, 1]
    assert batches[0].provide_data == [("data", (2,))]
    assert batches[0].pad == 0 and it.getpad() == 0 and it.getindex() is None


def test_resizeiter_without_default_bucket_key():
    it = ResizeIter(NDArrayIter(np.arange(4), batch_size=2), 1)
    assert not hasattr(it, "default_bucket_key")


# ---------------------------------------------------------------------------------- Prefetching

def _two_iters():
    a = NDArrayIter({"data": np.arange(6).reshape(6, 1)}, {"lbl": np.arange(6)}, batch_size=2)
    b = NDArrayIter({"data": np.arange(6).reshape(6, 1) + 100}, {"lbl": np.arange(6) + 100},
                    batch_size=2, layout="NTC")
    return a, b


def test_prefetching_concatenates_and_renames():
    a, b = _two_iters()
    it = PrefetchingIter([a, b], rename_data=[{"data": "d1"}, {"data": "d2"}],
                         rename_label=[{"lbl": "l1"}, {"lbl": "l2"}])
    assert [d.name for d in it.provide_data] == ["d1", "d2"]
    assert [d.name for d in it.provide_label] == ["l1", "l2"]
    assert it.provide_data[1].layout == "NTC" and it.provide_data[0].dtype is np.float32
    assert it.batch_size == 2
    batches = list(it)
    assert len(batches) == 3
    first = batches[0]
    assert [d.asnumpy().ravel().tolist() for d in first.data] == [[0, 1], [100, 101]]
    assert [d.asnumpy().tolist() for d in first.label] == [[0, 1], [100, 101]]
    assert first.provide_data == [("d1", (2, 1)), ("d2", (2, 1))]
    assert first.pad == 0
    it.reset()
    again = list(it)
    assert [d.asnumpy().ravel().tolist() for d in again[2].data] == [[4, 5], [104, 105]]


def test_prefetching_single_iter_without_renames():
    it = PrefetchingIter(NDArrayIter(np.arange(5), batch_size=2))
    assert [d.name for d in it.provide_data] == ["data"]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    assert it.getpad() == 1 and it.getdata()[0].shape == (2,)
    for _ in range(3):
        it.reset()
        assert len(list(it)) == 3


def test_prefetching_threads_are_daemons_and_stop():
    before = threading.active_count()
    it = PrefetchingIter(list(_two_iters()))
    threads = it.prefetch_threads
    assert len(threads) == 2 and all(t.daemon and t.is_alive() for t in threads)
    next(it)
    del it
    gc.collect()
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()
    assert threading.active_count() <= before


def test_prefetching_mismatched_iterators():
    a = NDArrayIter(np.arange(4), batch_size=2)
    b = NDArrayIter(np.arange(6), batch_size=2)
    it = PrefetchingIter([a, b])
    list(zip(range(2), it))
    with pytest.raises(DataIterError, match="different numbers of batches"):
        it.next()


def test_prefetching_rename_errors():
    a, b = _two_iters()
    with pytest.raises(DataIterError, match="one dict per iterator"):
        PrefetchingIter([a, b], rename_data=[{"data": "x"}])
    with pytest.raises(DataIterError, match="'data' has no entry"):
        PrefetchingIter([a], rename_data=[{"other": "x"}])
    with pytest.raises(DataIterError, match="at least one"):
        PrefetchingIter([])


def test_prefetching_reraises_inner_errors():
    class Broken(_CountingIter):
        provide_data = [DataDesc("data", (2,))]
        provide_label = []

        def iter_next(self):
            raise RuntimeError("disk on fire")

    it = PrefetchingIter(Broken(1))
    with pytest.raises(DataIterError, match="disk on fire"):
        it.next()
