"""mx.contrib.onnx.import_model: every exported operator case read back computes what it
computed before; MXNet's checkpoints survive the round trip with MXNet's numbers; models
written by hand in the styles other exporters use (shape arithmetic, asymmetric and automatic
padding, opset 11 attributes, LSTM and GRU nodes) give ONNX Runtime's numbers; an imported
model fine-tunes with Module; and what is refused says which node."""
import os
import sys

import numpy as np
import pytest

import minimod as mx
from minimod import onnx as mxonnx

from .helpers import export_and_run, export_checkpoint, minimod_forward, onnx_forward, random_params
from .test_export_ops import CASES

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime (test extra) is not installed")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "onnx")
sys.path.insert(0, DATA)
from onnx_models import MODELS  # noqa: E402

GOLDEN = np.load(os.path.join(DATA, "onnx_golden.npz"))


def _imported_forward(path, inputs):
    sym, arg, aux = mx.contrib.onnx.import_model(path)
    params = {k: v.asnumpy() for k, v in {**arg, **aux}.items()}
    used = {k: v for k, v in inputs.items() if k in sym.list_inputs()}
    return minimod_forward(sym, used, params)


@pytest.mark.parametrize("case", sorted(CASES))
def test_exported_case_reads_back(case, tmp_path):
    build, inputs = CASES[case]
    sym = build()
    params = random_params(sym, inputs)
    want = minimod_forward(sym, inputs, params)
    path = str(tmp_path / "m.onnx")
    export_and_run(sym, inputs, params, path)
    got = _imported_forward(path, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if case == "pool_max_full":  # a window wholly in the padding: -inf, or the lowest
            w = np.where(np.isneginf(w), np.finfo(np.float32).min, w)  # float the Pad holds
        assert g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mxnet_checkpoint_round_trip(name, tmp_path):
    data = GOLDEN[name + ":data"]
    path = export_checkpoint(DATA, name, data.shape, str(tmp_path / "m.onnx"))
    got = _imported_forward(path, {"data": data})
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, GOLDEN["%s:out%d" % (name, i)], rtol=1e-4, atol=2e-5)


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _save(tmp_path, nodes, inputs, outputs, inits, opset):
    graph = helper.make_graph(nodes, "hand", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    path = str(tmp_path / "hand.onnx")
    onnx.save(model, path)
    return path


def _value(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_cnn_in_another_exporters_style(tmp_path):
    """Opset 11: SAME_UPPER convolution, asymmetric max-pool padding, average pooling that
    leaves the padding out, a flatten through Shape/Gather/Unsqueeze/Concat/Reshape, Gemm,
    Softmax with opset 11's flattening axis."""
    rng = np.random.RandomState(0)
    inits = [_init("w1", rng.randn(4, 3, 3, 3).astype(np.float32) * 0.3),
             _init("b1", rng.randn(4).astype(np.float32)),
             _init("scale", rng.uniform(0.5, 1.5, 4).astype(np.float32)),
             _init("shift", rng.randn(4).astype(np.float32)),
             _init("mean", rng.randn(4).astype(np.float32) * 0.1),
             _init("var", rng.uniform(0.5, 1.5, 4).astype(np.float32)),
             _init("fc_w", rng.randn(5, 36).astype(np.float32) * 0.2),
             _init("fc_b", rng.randn(5).astype(np.float32)),
             _init("zero", np.array(0, np.int64)), _init("minus1", np.array([-1], np.int64))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], auto_pad="SAME_UPPER",
                         strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "scale", "shift", "mean", "var"],
                         ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p1"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("AveragePool", ["p1"], ["p2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("Shape", ["p2"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["p2", "target"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["fc"], transB=1, alpha=0.5),
        helper.make_node("Softmax", ["fc"], ["prob"], axis=1),
    ]
    path = _save(tmp_path, nodes, [_value("x", [2, 3, 11, 11])], [_value("prob", [2, 5])],
                 inits, 11)
    x = rng.randn(2, 3, 11, 11).astype(np.float32)
    want = onnx_forward(path, {"x": x})[0]
    sym, arg, aux = mx.contrib.onnx.import_model(path)
    assert set(aux) == {"mean", "var"}
    np.testing.assert_allclose(_imported_forward(path, {"x": x})[0], want, rtol=1e-5,
                               atol=1e-6)
    # the batch axis of the computed reshape stays free: the symbol binds at batch 5 too
    x5 = rng.randn(5, 3, 11, 11).astype(np.float32)
    params = {k: v.asnumpy() for k, v in {**arg, **aux}.items()}
    out5 = minimod_forward(sym, {"x": x5}, params)[0]
    assert out5.shape == (5, 5)
    np.testing.assert_allclose(out5[:2], minimod_forward(sym, {"x": x5[:2]}, params)[0],
                               rtol=1e-6)


def test_tensor_ops_at_opset_13(tmp_path):
    rng = np.random.RandomState(1)
    inits = [_init("w", rng.randn(6, 8).astype(np.float32)), _init("bias", rng.randn(8)
                                                                     .astype(np.float32)),
             _init("sizes", np.array([3, 5], np.int64)), _init("axes1", np.array([1], np.int64)),
             _init("starts", np.array([-1], np.int64)), _init("ends", np.array([-100], np.int64)),
             _init("steps", np.array([-2], np.int64)), _init("lo", np.array(-0.5, np.float32)),
             _init("hi", np.array(0.7, np.float32)), _init("two", np.array(2.0, np.float32)),
             _init("shape", np.array([2, 1, 8], np.int64)), _init("reps", np.array([1, 2, 1],
                                                                                    np.int64)),
             _init("slope", rng.rand(1).astype(np.float32))]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["lin"]),
        helper.make_node("LeakyRelu", ["lin"], ["act"], alpha=0.2),
        helper.make_node("Split", ["act", "sizes"], ["a", "b"], axis=1),
        helper.make_node("Concat", ["b", "a"], ["swapped"], axis=-1),
        helper.make_node("Slice", ["swapped", "starts", "ends", "axes1", "steps"], ["sl"]),
        helper.make_node("Clip", ["sl", "lo", "hi"], ["clipped"]),
        helper.make_node("Pow", ["clipped", "two"], ["sq"]),
        helper.make_node("Sub", ["two", "sq"], ["rsub"]),
        helper.make_node("ReduceMean", ["rsub"], ["mean"], axes=[1], keepdims=1),
        helper.make_node("Unsqueeze", ["lin", "axes1"], ["lin3"]),
        helper.make_node("Expand", ["lin3", "shape"], ["wide"]),
        helper.make_node("Tile", ["wide", "reps"], ["tiled"]),
        helper.make_node("PRelu", ["tiled", "slope"], ["pr"]),
        helper.make_node("Greater", ["pr", "two"], ["big"]),
        helper.make_node("Where", ["big", "pr", "mean"], ["picked"]),
        helper.make_node("Transpose", ["picked"], ["out"], perm=[2, 0, 1]),
    ]
    path = _save(tmp_path, nodes, [_value("x", [2, 6])],
                 [_value("out", [8, 2, 2]), _value("mean", [2, 1])], inits, 13)
    x = rng.randn(2, 6).astype(np.float32)
    want = onnx_forward(path, {"x": x})
    got = _imported_forward(path, {"x": x})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU", "RNN"])
def test_recurrent_nodes(op_type, tmp_path):
    """A bidirectional layer with given initial states and a forward one without, chained."""
    rng = np.random.RandomState(2)
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op_type]
    steps, batch, size, hidden = 4, 3, 5, 6
    extra = {"linear_before_reset": 1} if op_type == "GRU" else {}

    def weights(tag, dirs, inputs):
        return [_init(tag + "W", rng.randn(dirs, gates * hidden, inputs).astype(np.float32)
                      * 0.4),
                _init(tag + "R", rng.randn(dirs, gates * hidden, hidden).astype(np.float32)
                      * 0.4),
                _init(tag + "B", rng.randn(dirs, 2 * gates * hidden).astype(np.float32)
                      * 0.2)]
    inits = weights("l0", 2, size) + weights("l1", 1, 2 * hidden)
    states = ["h0", "c0"] if op_type == "LSTM" else ["h0"]
    inputs = [_value("x", [steps, batch, size])] + [_value(s, [2, batch, hidden])
                                                     for s in states]
    first = ["x", "l0W", "l0R", "l0B", ""] + states
    outs0 = ["y0", "yh0"] + (["yc0"] if op_type == "LSTM" else [])
    nodes = [
        helper.make_node(op_type, first, outs0, hidden_size=hidden, direction="bidirectional",
                         **extra),
        helper.make_node("Transpose", ["y0"], ["y0t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["y0t", "merge"], ["y0m"]),
        helper.make_node(op_type, ["y0m", "l1W", "l1R", "l1B"], ["y1", "yh1"],
                         hidden_size=hidden, **extra),
    ]
    inits.append(_init("merge", np.array([0, 0, -1], np.int64)))
    outputs = [_value("y1", [steps, 1, batch, hidden]), _value("yh0", [2, batch, hidden]),
               _value("yh1", [1, batch, hidden])]
    path = _save(tmp_path, nodes, inputs, outputs, inits, 13)
    feed = {"x": rng.randn(steps, batch, size).astype(np.float32)}
    feed.update({s: rng.randn(2, batch, hidden).astype(np.float32) for s in states})
    want = onnx_forward(path, feed)
    got = _imported_forward(path, feed)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_opset_20_gelu_and_layer_normalization(tmp_path):
    rng = np.random.RandomState(4)
    inits = [_init("scale", rng.rand(6).astype(np.float32) + 0.5)]
    nodes = [helper.make_node("LayerNormalization", ["x", "scale"], ["n"], epsilon=1e-3),
             helper.make_node("Gelu", ["n"], ["g"], approximate="tanh"),
             helper.make_node("Gelu", ["g"], ["y"])]
    path = _save(tmp_path, nodes, [_value("x", [2, 3, 6])], [_value("y", [2, 3, 6])], inits,
                 20)
    x = rng.randn(2, 3, 6).astype(np.float32)
    np.testing.assert_allclose(_imported_forward(path, {"x": x})[0],
                               onnx_forward(path, {"x": x})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis, stats", [(-2, True), (1, False), (-1, True)])
def test_layer_normalization_over_trailing_axes(tmp_path, axis, stats):
    rng = np.random.RandomState(5)
    shape = (2, 3, 4, 5)
    trailing = shape[axis % 4:]
    inits = [_init("scale", rng.rand(*trailing).astype(np.float32) + 0.5),
             _init("bias", rng.randn(*trailing).astype(np.float32))]
    outputs = ["y", "mean", "invstd"] if stats else ["y"]
    nodes = [helper.make_node("LayerNormalization", ["x", "scale", "bias"], outputs,
                              axis=axis, epsilon=1e-4)]
    stat_shape = list(shape[:axis % 4]) + [1] * (4 - axis % 4)
    path = _save(tmp_path, nodes, [_value("x", list(shape))],
                 [_value("y", list(shape))] + [_value(o, stat_shape) for o in outputs[1:]],
                 inits, 17)
    x = rng.randn(*shape).astype(np.float32)
    got, want = _imported_forward(path, {"x": x}), onnx_forward(path, {"x": x})
    assert len(got) == len(want) == len(outputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_metadata(tmp_path):
    sym, arg, aux = mx.model.load_checkpoint(os.path.join(DATA, "lenet_bn"), 0)
    path = mxonnx.export_model(sym, [arg, aux], [(4, 3, 16, 16)], np.float32,
                               str(tmp_path / "m.onnx"), dynamic=True,
                               dynamic_input_shapes=[(None, 3, 16, 16)])
    meta = mx.contrib.onnx.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", ("", 3, 16, 16))]
    assert [name for name, _ in meta["output_tensor_data"]] == ["softmax"]


def test_imported_model_fine_tunes_with_module(tmp_path):
    """Import a classifier, put a SoftmaxOutput on its logits, train a few epochs."""
    sym, arg, aux = mx.model.load_checkpoint(os.path.join(DATA, "lenet_bn"), 0)
    path = mxonnx.export_model(sym, [arg, aux], [(4, 3, 16, 16)], np.float32,
                               str(tmp_path / "m.onnx"))
    net, arg_params, aux_params = mx.contrib.onnx.import_model(path)
    assert {"conv1_weight", "fc2_bias"} <= set(arg_params)
    assert {"bn1_moving_mean", "bn2_moving_var"} <= set(aux_params)
    logits = net.get_internals()["fc2_output"]
    head = mx.sym.SoftmaxOutput(logits, name="softmax")
    rng = np.random.RandomState(3)
    x = rng.randn(32, 3, 16, 16).astype(np.float32)
    y = rng.randint(0, 10, 32).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="softmax_label")
    mod = mx.mod.Module(head, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(arg_params=arg_params, aux_params=aux_params, allow_missing=False)
    before = dict(mod.score(it, "ce"))["cross-entropy"]
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05})
    for _ in range(4):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    after = dict(mod.score(it, "ce"))["cross-entropy"]
    assert after < before


def test_refusals_name_the_node(tmp_path):
    nodes = [helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,ij->i", name="mix")]
    path = _save(tmp_path, nodes, [_value("x", [2, 3])], [_value("y", [2])], [], 13)
    with pytest.raises(mxonnx.ONNXImportError, match="'mix': ONNX operator Einsum"):
        mx.contrib.onnx.import_model(path)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Reshape", ["x", "s"], ["y"], name="again")]
    path = _save(tmp_path, nodes, [_value("x", ["batch", 3])], [_value("y", ["batch", 3])],
                 [], 13)
    with pytest.raises(mxonnx.ONNXImportError, match="'again' \\(Reshape\\).*constant"):
        mx.contrib.onnx.import_model(path)
    with pytest.raises(mx.base.MXNetError, match="Module"):
        mx.contrib.onnx.import_to_gluon(path, mx.cpu())
