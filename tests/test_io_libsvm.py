"""mx.io.LibSVMIter (minimod/io/libsvm.py) beyond the batches checked against MXNet 1.9.1 in
test_io_files.py: what a batch is, the errors, and training a Module on CSR batches."""
import os

import numpy as np
import pytest

import minimod as mx
from minimod.io import DataIterError

FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "io", "files")


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_a_batch_is_csr_with_the_rows_in_file_order(tmp_path):
    path = _write(tmp_path / "d.t", "1 3:1.5 0:2\n0\n2 1:-1\n")
    it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(4,), batch_size=2)
    batch = next(it)
    data = batch.data[0]
    assert isinstance(data, mx.nd.sparse.CSRNDArray) and data.shape == (2, 4)
    assert data.indices.asnumpy().tolist() == [3, 0]  # as the line has them, as MXNet keeps
    assert data.indptr.asnumpy().tolist() == [0, 2, 2]
    np.testing.assert_array_equal(data.asnumpy(), [[2, 0, 0, 1.5], [0, 0, 0, 0]])
    assert batch.label[0].asnumpy().tolist() == [1, 0]
    assert batch.index.dtype == np.uint64 and batch.index.tolist() == [0, 1]
    second = next(it)
    assert second.pad == 1 and second.index.tolist() == [2, 0]
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("text, kwargs, message", [
    ("1 0:1 4:2\n", dict(data_shape=(4,)), r"row 0 of '.*' has feature index 4, outside"),
    ("1 0:1\n0 a:2\n", dict(data_shape=(4,)), "is not LibSVM text"),
    ("0:1 1:2\n", dict(data_shape=(4,)), "starts with '0:1', not a label"),
    ("", dict(data_shape=(4,)), "holds no rows"),
    ("1 0:1\n", dict(data_shape=(4,), batch_size=2), "1 rows .* fewer than batch_size=2"),
    ("1 0:1\n", dict(data_shape=(4,), round_batch=False), "round_batch=False"),
    ("1 0:1\n", dict(data_shape=(4,), label_shape=(2,)), "label_shape must be \\(1,\\)"),
    ("1 0:1\n", dict(data_shape=(4,), num_parts=2, part_index=2), "part_index=2 is not in"),
    ("1 0:1\n", dict(data_shape=(2, 2)), "must be 1-D"),
    ("1 0:1\n", dict(data_shape=(4,), dtype="float64"), "the batches are float32"),
])
def test_bad_input_is_refused_naming_it(tmp_path, text, kwargs, message):
    path = _write(tmp_path / "d.t", text)
    with pytest.raises(DataIterError, match=message):
        mx.io.LibSVMIter(data_libsvm=path, **kwargs)


def test_an_unknown_keyword_is_refused(tmp_path):
    path = _write(tmp_path / "d.t", "1 0:1\n")
    with pytest.raises(TypeError, match="label_shapes"):
        mx.io.LibSVMIter(data_libsvm=path, data_shape=(4,), label_shapes=(1,))
    mx.io.LibSVMIter(data_libsvm=path, data_shape=(4,), prefetch_buffer=2, ctx="cpu")


def test_label_rows_must_match_the_data_rows(tmp_path):
    data = _write(tmp_path / "d.t", "1 0:1\n0 1:1\n")
    label = _write(tmp_path / "l.t", "0 0:1\n")
    with pytest.raises(DataIterError, match="'.*l.t' has 1 rows but '.*d.t' has 2"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(2,), label_libsvm=label,
                         label_shape=(2,))


def test_parts_cover_every_row_once():
    path = os.path.join(FILES, "data.libsvm")
    whole = mx.io.LibSVMIter(data_libsvm=path, data_shape=(8,), batch_size=1)
    rows = [b.data[0].asnumpy() for b in whole]
    parts = []
    for i in range(4):
        it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(8,), batch_size=1, num_parts=4,
                              part_index=i)
        parts += [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(np.concatenate(parts), np.concatenate(rows))


def test_a_module_learns_from_libsvm_batches_with_a_row_sparse_weight(tmp_path):
    rng = np.random.RandomState(0)
    lines, truth = [], rng.uniform(-1, 1, 20)
    for _ in range(200):
        cols = rng.choice(20, 4, replace=False)
        vals = rng.uniform(0, 1, 4)
        lines.append("%d %s" % (float(vals @ truth[cols]) > 0,
                                " ".join("%d:%.4f" % cv for cv in zip(cols, vals))))
    path = _write(tmp_path / "train.t", "\n".join(lines) + "\n")
    it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(20,), batch_size=20)
    x = mx.sym.var("data", stype="csr")
    w = mx.sym.var("weight", shape=(20, 2), stype="row_sparse")
    net = mx.sym.SoftmaxOutput(mx.sym.sparse.dot(x, w), name="softmax")
    mod = mx.mod.Module(net, label_names=["softmax_label"])
    mod.fit(it, num_epoch=20, optimizer="sgd",
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9, "wd": 1e-4})
    assert mod.get_params()[0]["weight"].stype == "row_sparse"
    assert mod.score(it, "acc")[0][1] > 0.85
