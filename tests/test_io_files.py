"""mx.io.CSVIter and mx.io.MNISTIter against MXNet 1.9.1 (tests/data/io/file_iters_golden.json,
written by gen_file_iters_golden.py from the files in tests/data/io/files)."""
import gzip
import json
import os
import shutil
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.io import DataIterError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "io")
sys.path.insert(0, HERE)
import gen_file_iters_golden as cases  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "file_iters_golden.json")))
FILES = os.path.join(HERE, "files")


@pytest.mark.parametrize("name, iterator, kwargs, epochs", cases.SCENARIOS,
                         ids=[s[0] for s in cases.SCENARIOS])
def test_batches_match_mxnet(name, iterator, kwargs, epochs):
    got = cases.run(mx, name, iterator, kwargs, epochs)
    want = GOLDEN[name]
    assert got["provide_data"] == want["provide_data"]
    assert got["provide_label"] == want["provide_label"]
    assert len(got["epochs"]) == len(want["epochs"])
    for epoch_got, epoch_want in zip(got["epochs"], want["epochs"]):
        assert [b["pad"] for b in epoch_got] == [b["pad"] for b in epoch_want]
        for b_got, b_want in zip(epoch_got, epoch_want):
            np.testing.assert_array_equal(b_got["label"], b_want["label"])
            np.testing.assert_array_equal(np.float32(b_got["data"]), np.float32(b_want["data"]))


def test_gzipped_mnist_files_read_the_same(tmp_path):
    for name in ("img-idx3-ubyte", "lbl-idx1-ubyte"):
        with open(os.path.join(FILES, name), "rb") as src, \
                gzip.open(tmp_path / (name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    plain = mx.io.MNISTIter(image=os.path.join(FILES, "img-idx3-ubyte"),
                            label=os.path.join(FILES, "lbl-idx1-ubyte"), batch_size=7,
                            shuffle=False)
    zipped = mx.io.MNISTIter(image=str(tmp_path / "img-idx3-ubyte.gz"),
                             label=str(tmp_path / "lbl-idx1-ubyte.gz"), batch_size=7,
                             shuffle=False)
    np.testing.assert_array_equal(next(plain).data[0].asnumpy(), next(zipped).data[0].asnumpy())


def test_mnist_shuffle_is_seeded_and_kept_across_epochs():
    def labels(seed):
        it = mx.io.MNISTIter(image=os.path.join(FILES, "img-idx3-ubyte"),
                             label=os.path.join(FILES, "lbl-idx1-ubyte"), batch_size=1,
                             seed=seed)
        first = [b.label[0].asscalar() for b in it]
        it.reset()
        assert [b.label[0].asscalar() for b in it] == first
        return first
    assert labels(1) == labels(1)
    assert sorted(labels(2)) == sorted(labels(1))


def test_csv_iter_trains_a_module(tmp_path):
    rng = np.random.RandomState(0)
    x = rng.randn(40, 3).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    np.savetxt(tmp_path / "x.csv", x, delimiter=",")
    np.savetxt(tmp_path / "y.csv", y, delimiter=",")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "x.csv"), data_shape=(3,),
                       label_csv=str(tmp_path / "y.csv"), batch_size=8)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2),
                               name="softmax")
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=30, optimizer_params={"learning_rate": 0.5})
    assert mod.score(it, "acc")[0][1] > 0.9


def test_bad_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3\n4,5,6\n")
    with pytest.raises(DataIterError, match=r"the rows of '.*bad.csv' have 3 values but the "
                                            r"shape \(2, 2\) needs 4"):
        mx.io.CSVIter(data_csv=str(bad), data_shape=(2, 2))
    with pytest.raises(DataIterError, match="fewer than batch_size=5"):
        mx.io.CSVIter(data_csv=str(bad), data_shape=(3,), batch_size=5)
    with pytest.raises(DataIterError, match="cannot read"):
        mx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,))
    with pytest.raises(DataIterError, match="is not an IDX file of 3-D unsigned bytes"):
        mx.io.MNISTIter(image=os.path.join(FILES, "lbl-idx1-ubyte"),
                        label=os.path.join(FILES, "lbl-idx1-ubyte"))
    with pytest.raises(DataIterError, match="part_index=3 must lie in"):
        mx.io.MNISTIter(image=os.path.join(FILES, "img-idx3-ubyte"),
                        label=os.path.join(FILES, "lbl-idx1-ubyte"), num_parts=3, part_index=3)


def test_file_iterators_give_their_one_data_and_label_array_directly(tmp_path):
    """MXNet's file iterators return one NDArray from getdata()/getlabel() (NDArrayIter
    returns lists); the batches they yield still hold lists."""
    np.savetxt(tmp_path / "x.csv", np.arange(12.0).reshape(4, 3), delimiter=",")
    it = mx.io.CSVIter(data_csv=str(tmp_path / "x.csv"), data_shape=(3,), batch_size=2)
    batch = next(it)
    assert isinstance(it.getdata(), mx.nd.NDArray) and isinstance(it.getlabel(), mx.nd.NDArray)
    np.testing.assert_array_equal(it.getdata().asnumpy(), [[0, 1, 2], [3, 4, 5]])
    assert isinstance(batch.data, list) and len(batch.data) == 1
    np.testing.assert_array_equal(batch.data[0].asnumpy(), it.getdata().asnumpy())


def test_mxnets_reader_options_are_taken_and_unknown_keywords_refused(tmp_path):
    np.savetxt(tmp_path / "x.csv", np.arange(6.0).reshape(2, 3), delimiter=",")
    mx.io.CSVIter(data_csv=str(tmp_path / "x.csv"), data_shape=(3,), prefetch_buffer=2,
                  ctx="cpu")
    with pytest.raises(TypeError, match="data_shapes"):
        mx.io.CSVIter(data_csv=str(tmp_path / "x.csv"), data_shape=(3,), data_shapes=(3,))
    mnist = dict(image=os.path.join(FILES, "img-idx3-ubyte"),
                 label=os.path.join(FILES, "lbl-idx1-ubyte"))
    mx.io.MNISTIter(prefetch_buffer=2, ctx="cpu", dtype="float32", **mnist)
    with pytest.raises(TypeError, match="shufle"):
        mx.io.MNISTIter(shufle=False, **mnist)
    with pytest.raises(DataIterError, match="dtype='float64'"):
        mx.io.MNISTIter(dtype="float64", **mnist)
