"""mx.onnx.export_model as a user calls it: MXNet's checkpoint files in, an ONNX file out that
ONNX Runtime runs to MXNet 1.9.1's own numbers (tests/data/onnx, written by MXNet), and the
arguments (labels, dynamic shapes, old names, shape inference), errors and file safety."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod import onnx as mxonnx
from minimod.base import MissingDependencyError

from .helpers import export_and_run, export_checkpoint, minimod_forward, onnx_forward, random_params

pytest.importorskip("onnx", reason="the onnx extra is not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime (test extra) is not installed")

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "onnx")
sys.path.insert(0, DATA)
from onnx_models import MODELS  # noqa: E402

GOLDEN = np.load(os.path.join(DATA, "onnx_golden.npz"))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mxnet_checkpoint_exports_to_mxnet_numbers(name, tmp_path):
    """Files MXNet wrote, exported from their paths: ONNX Runtime gives MXNet's outputs."""
    data = GOLDEN[name + ":data"]
    path = export_checkpoint(DATA, name, data.shape, str(tmp_path / "model.onnx"))
    assert path == str(tmp_path / "model.onnx")
    got = onnx_forward(path, {"data": data})
    want = [GOLDEN["%s:out%d" % (name, i)] for i in range(len(got))]
    assert "%s:out%d" % (name, len(got)) not in GOLDEN.files
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=2e-5)


def _lenet():
    sym, shapes = MODELS["lenet_bn"](mx)
    arg, aux = mx.model.load_params(os.path.join(DATA, "lenet_bn"), 0)
    return sym, arg, aux, GOLDEN["lenet_bn:data"]


def test_model_structure_and_names(tmp_path):
    import onnx
    sym, arg, aux, data = _lenet()
    path = mxonnx.export_model(sym, [arg, aux], [data.shape], np.float32,
                               str(tmp_path / "m.onnx"))
    model = onnx.load(path)
    assert [o.version for o in model.opset_import] == [mxonnx.OPSET_VERSION]
    assert model.producer_name == "minimod"
    assert [i.name for i in model.graph.input] == ["data"]  # the label is not an input
    assert [o.name for o in model.graph.output] == ["softmax"]
    stored = {t.name for t in model.graph.initializer}
    assert {"conv1_weight", "bn2_gamma", "bn1_moving_mean", "fc2_bias"} <= stored
    assert "bn1_gamma" not in stored  # fix_gamma: a constant of ones stands in for it
    dims = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [4, 10]


def test_label_shapes_may_be_given(tmp_path):
    sym, arg, aux, data = _lenet()
    path = mxonnx.export_model(sym, {**arg, **aux}, [data.shape, (4,)], [np.float32] * 2,
                               str(tmp_path / "m.onnx"))
    np.testing.assert_allclose(onnx_forward(path, {"data": data})[0], GOLDEN["lenet_bn:out0"],
                               rtol=1e-4, atol=2e-5)


def test_old_argument_names(tmp_path):
    sym, arg, aux, data = _lenet()
    path = mxonnx.export_model(sym, {**arg, **aux}, input_shape=[data.shape],
                               input_type=np.float32, onnx_file_path=str(tmp_path / "m.onnx"))
    np.testing.assert_allclose(onnx_forward(path, {"data": data})[0], GOLDEN["lenet_bn:out0"],
                               rtol=1e-4, atol=2e-5)


def test_dynamic_batch(tmp_path):
    import onnx
    sym, arg, aux, data = _lenet()
    path = mxonnx.export_model(sym, {**arg, **aux}, [data.shape], np.float32,
                               str(tmp_path / "m.onnx"), dynamic=True,
                               dynamic_input_shapes=[(None, 3, 16, 16)],
                               run_shape_inference=True)
    dims = onnx.load(path).graph.input[0].type.tensor_type.shape.dim
    assert [d.HasField("dim_value") for d in dims] == [False, True, True, True]
    params = {**arg, **aux}
    for batch in (1, 7):
        x = np.random.RandomState(batch).randn(batch, 3, 16, 16).astype(np.float32)
        want = minimod_forward(sym, {"data": x}, {k: v.asnumpy() for k, v in params.items()})
        np.testing.assert_allclose(onnx_forward(path, {"data": x})[0], want[0], rtol=1e-4,
                                   atol=2e-5)


def test_dynamic_refuses_baked_shapes(tmp_path):
    net = mx.sym.Reshape(mx.sym.var("data"), shape=(-3, -2), name="merge")
    with pytest.raises(mxonnx.ONNXExportError, match="'merge' .*dynamic=True"):
        mxonnx.export_model(net, {}, [(2, 3, 4)], np.float32, str(tmp_path / "m.onnx"),
                            dynamic=True)


def test_groups_and_repeated_outputs(tmp_path):
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.Group([fc, mx.sym.relu(fc, name="act"), fc, data])
    x = {"data": np.random.RandomState(0).randn(2, 4).astype(np.float32)}
    params = random_params(net, x)
    got = export_and_run(net, x, params, str(tmp_path / "m.onnx"))
    want = minimod_forward(net, x, params)
    assert len(got) == 4
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_verbose_logs_each_node(tmp_path, caplog):
    import logging
    caplog.set_level(logging.INFO)
    net = mx.sym.relu(mx.sym.var("data"), name="act")
    mxonnx.export_model(net, {}, [(2, 2)], np.float32, str(tmp_path / "m.onnx"), verbose=True)
    assert "'act' (relu)" in caplog.text


def test_errors_name_what_is_wrong(tmp_path):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    params = {"fc_weight": np.zeros((3, 4), np.float32), "fc_bias": np.zeros(3, np.float32)}
    out = str(tmp_path / "m.onnx")
    with pytest.raises(mxonnx.ONNXExportError, match=r"in_shapes is required.*\['data'\]"):
        mxonnx.export_model(net, params, None, np.float32, out)
    with pytest.raises(mxonnx.ONNXExportError, match=r"2 shapes.*\['data'\]"):
        mxonnx.export_model(net, params, [(2, 4), (2, 4)], np.float32, out)
    with pytest.raises(mxonnx.ONNXExportError, match="in_types has 2 dtypes for 1 shapes"):
        mxonnx.export_model(net, params, [(2, 4)], [np.float32, np.float32], out)
    with pytest.raises(mxonnx.ONNXExportError, match="params must be"):
        mxonnx.export_model(net, [params], [(2, 4)], np.float32, out)
    with pytest.raises(mxonnx.ONNXExportError, match="sym must be a Symbol"):
        mxonnx.export_model(42, params, [(2, 4)], np.float32, out)
    weird = mx.sym.Correlation(data, data, name="corr")
    with pytest.raises(mxonnx.ONNXExportError, match="'Correlation' \\(node 'corr'\\)"):
        mxonnx.export_model(weird, {}, [(1, 2, 5, 5)], np.float32, out)
    always = mx.sym.Dropout(data, p=0.5, mode="always", name="drop")
    with pytest.raises(mxonnx.ONNXExportError, match="node 'drop' \\(Dropout\\)"):
        mxonnx.export_model(always, {}, [(2, 4)], np.float32, out)
    with pytest.raises(mxonnx.ONNXExportError,
                       match=r"graph inputs are \['data', 'fc_weight', 'fc_bias'\]"):
        mxonnx.export_model(net, {}, [(2, 4)], np.float32, out)  # parameters left out
    assert not os.path.exists(out)


def test_fused_rnn_needs_its_parameters(tmp_path):
    net = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("w"), mx.sym.var("h"), state_size=4,
                     num_layers=1, mode="gru", name="gru")
    with pytest.raises(mxonnx.ONNXExportError, match="'gru'.*'parameters' must be given"):
        mxonnx.export_model(net, {}, [(3, 2, 5), (132,), (1, 2, 4)], np.float32,
                            str(tmp_path / "m.onnx"))


def test_failed_export_keeps_the_old_file(tmp_path):
    out = tmp_path / "m.onnx"
    out.write_bytes(b"the previous model")
    net = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"))
    with pytest.raises(mxonnx.ONNXExportError):
        mxonnx.export_model(net, {}, [(1, 2, 5, 5)] * 2, np.float32, str(out))
    assert out.read_bytes() == b"the previous model"
    assert os.listdir(tmp_path) == ["m.onnx"]


def test_operator_support_lists_the_converters():
    ops = mxonnx.get_operator_support()
    assert {"Convolution", "BatchNorm", "RNN", "SoftmaxOutput", "Reshape"} <= set(ops)
    assert ops == sorted(ops)
    assert mxonnx.get_operator_support(12) == []


def test_contrib_path_warns_and_exports(tmp_path):
    net = mx.sym.relu(mx.sym.var("data"))
    with pytest.warns(DeprecationWarning, match="mx.onnx.export_model"):
        path = mx.contrib.onnx.export_model(net, {}, [(2, 3)], np.float32,
                                            str(tmp_path / "m.onnx"))
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(onnx_forward(path, {"data": x})[0], np.maximum(x, 0))


def test_without_onnx_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingDependencyError, match="pip install 'minimod\\[onnx\\]'"):
        mxonnx.export_model(mx.sym.var("data"), {}, [(1,)], np.float32,
                            str(tmp_path / "m.onnx"))


@pytest.mark.parametrize("case", ["rnn", "nested_lists", "nested_loops"])
def test_foreach_graphs_export_unrolled(case, tmp_path):
    """contrib.foreach loops are exported unrolled over the lengths in in_shapes."""
    sys.path.insert(0, os.path.join(os.path.dirname(DATA), "symbol"))
    from foreach_cases import CASES as LOOPS
    net, shapes = LOOPS[case](mx)
    rng = np.random.RandomState(0)
    inputs = {k: rng.randn(*v).astype(np.float32) for k, v in shapes.items()}
    params = random_params(net, inputs)
    want = minimod_forward(net, inputs, params)
    got = export_and_run(net, inputs, params, str(tmp_path / "m.onnx"))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(mxonnx.ONNXExportError, match="foreach loops.*dynamic=True"):
        mxonnx.export_model(net, params, list(shapes.values()), np.float32,
                            str(tmp_path / "d.onnx"), dynamic=True)
