"""MXNet's two shape semantics (minimod.shape_semantics): the legacy one and `mx.np_shape`.

The scenarios of tests/data/np_shape/cases.py run here and under MXNet 1.9.1 (its results are
np_shape_golden.json, and the files its `mx.nd.save` wrote beside it).
"""
import json
import os
import sys
import threading

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "np_shape")
sys.path.insert(0, HERE)
import cases  # noqa: E402

with open(os.path.join(HERE, "np_shape_golden.json")) as _handle:
    GOLDEN = json.load(_handle)


@pytest.fixture(autouse=True)
def _legacy_after():
    yield
    mx.set_np_shape(False)


@pytest.mark.parametrize("np_shape", [False, True], ids=["legacy", "np_shape"])
def test_shape_inference_speaks_each_semantics(np_shape):
    with pytest.warns(UserWarning):  # infer_shape warns about the shapes it cannot decide
        got = cases.infer(mx, np_shape)
    assert got == GOLDEN["infer_np" if np_shape else "infer_legacy"]


def test_symbol_json_marks_and_converts_np_shapes():
    assert cases.json_attrs(mx) == GOLDEN["json"]


def test_imperative_zero_size_and_scalars():
    assert cases.imperative(mx) == GOLDEN["imperative"]


def test_bound_graph_with_zero_size_batch_and_scalar_input():
    assert cases.bound(mx) == GOLDEN["bound"]


def test_zero_size_batch_gives_zero_weight_gradient():
    # MXNet 1.9.1 leaves this gradient unallocated ("Check failed: delay_alloc"); nothing
    # flowed back, so it is zero
    with mx.np_shape(True):
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
        exe = net.simple_bind(mx.cpu(), data=(0, 4))
        exe.grad_dict["fc_weight"][:] = 7
        exe.forward(is_train=True)
        exe.backward([mx.nd.zeros((0, 3))])
        assert np.array_equal(exe.grad_dict["fc_weight"].asnumpy(), np.zeros((3, 4)))
        assert np.array_equal(exe.grad_dict["fc_bias"].asnumpy(), np.zeros(3))


def test_saved_files_match_mxnet_byte_for_byte(tmp_path):
    got = cases.saved(mx, str(tmp_path / "saved"))
    assert got == GOLDEN["saved"]
    for kind in ("legacy", "np"):
        with open(tmp_path / ("saved." + kind), "rb") as mine, \
                open(os.path.join(HERE, "saved." + kind), "rb") as theirs:
            assert mine.read() == theirs.read(), kind


def test_load_under_the_other_semantics_says_which_to_use():
    with mx.np_shape(False), pytest.raises(MXNetError, match=r"saved\.np.*mx\.np_shape\(True\)"):
        mx.nd.load(os.path.join(HERE, "saved.np"))
    with mx.np_shape(True), pytest.raises(MXNetError, match=r"saved\.legacy.*np_shape\(False\)"):
        mx.nd.load(os.path.join(HERE, "saved.legacy"))


def test_legacy_refuses_a_scalar_save_instead_of_writing_an_unreadable_file(tmp_path):
    # MXNet 1.9.1 writes it, and then cannot read it back ("basic_string::resize")
    target = tmp_path / "x.params"
    with pytest.raises(MXNetError, match="0-d array"):
        mx.nd.save(str(target), [mx.nd.array(np.array(1.0))])
    assert not target.exists()


def test_legacy_refusals_name_the_call_and_shape():
    with pytest.raises(MXNetError, match=r"mx\.nd\.zeros.*\(0, 1, 3, 0\).*np_shape"):
        mx.nd.zeros((0, 1, 3, 0))
    with pytest.raises(MXNetError, match=r"mx\.nd\.relu: an input has shape \(2, 0\)"):
        mx.nd.relu(mx.nd.array(np.zeros((2, 0))))


def test_min_max_over_nothing_raise():
    empty = mx.nd.array(np.zeros((5, 0)))
    with pytest.raises(MXNetError, match="legacy shape semantics"):
        mx.nd.min(empty)
    with mx.np_shape(True):
        for reduce in (mx.nd.min, mx.nd.max):
            with pytest.raises(MXNetError, match="zero-size axis"):
                reduce(empty)
        # over a non-empty axis there is something to reduce: shape (5, 0) -> (0,)
        assert mx.nd.max(empty, axis=0).shape == (0,)


def test_switches_restore_and_stay_in_their_thread():
    assert mx.set_np_shape(True) is False
    assert mx.is_np_shape()
    seen = []
    worker = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
    worker.start()
    worker.join()
    assert seen == [False]  # per thread, as MXNet's switch
    with mx.np_shape(False):
        assert not mx.is_np_shape()
    assert mx.is_np_shape()
    mx.util.reset_np()
    assert not mx.is_np_shape()
    with pytest.raises(RuntimeError), mx.np_shape(True):
        raise RuntimeError("leaves the block")
    assert not mx.is_np_shape()


def test_use_np_shape_wraps_functions_and_classes():
    @mx.use_np_shape
    def scalar_one():
        """One, as a 0-d array."""
        return mx.nd.ones(())

    assert scalar_one.__name__ == "scalar_one" and scalar_one.__doc__ == "One, as a 0-d array."
    assert scalar_one().shape == () and not mx.is_np_shape()

    @mx.util.use_np_shape
    class Maker:
        def make(self, shape):
            return mx.nd.zeros(shape)

    assert Maker().make((2, 0)).shape == (2, 0)
    with pytest.raises(MXNetError):
        mx.nd.zeros((2, 0))
    with pytest.raises(TypeError, match="use_np_shape"):
        mx.use_np_shape(3)


def test_numpy_array_semantics_are_refused_clearly():
    with pytest.raises(NotImplementedError, match=r"mx\.np"):
        mx.util.set_np()
    mx.util.set_np(shape=True, array=False)
    assert mx.is_np_shape()


def test_simple_bind_refuses_unknown_dims_by_name():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    with pytest.raises(MXNetError, match=r"'data' is given shape \(0, 4\).*np_shape"):
        net.simple_bind(mx.cpu(), data=(0, 4))  # MXNet: 0 is unknown in the legacy semantics
    with mx.np_shape(True), pytest.raises(MXNetError, match=r"'data' is given shape \(-1, 4\)"):
        net.simple_bind(mx.cpu(), data=(-1, 4))


def test_layers_take_a_zero_size_batch():
    assert cases.zero_batch(mx) == GOLDEN["zero_batch"]


def test_zero_size_batch_trains_with_zero_gradients():
    """A bound convolutional net and its imperative twin, 0 samples: no kernel runs, every
    parameter gradient is 0 and nothing is NaN (MXNet leaves them unallocated)."""
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.BatchNorm(mx.sym.Activation(net, act_type="relu"), name="bn")
    net = mx.sym.FullyConnected(mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2),
                                               pool_type="max"), num_hidden=2, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    with mx.np_shape(True):
        exe = net.simple_bind(mx.cpu(), data=(0, 3, 8, 8), softmax_label=(0,))
        for grad in exe.grad_arrays:
            grad[:] = 5
        exe.forward(is_train=True)
        exe.backward()
        assert exe.outputs[0].shape == (0, 2)
        for name in ("conv_weight", "conv_bias", "bn_gamma", "fc_weight"):
            assert not exe.grad_dict[name].asnumpy().any(), name
        x = mx.nd.zeros((0, 3))
        w = mx.nd.ones((2, 3))
        w.attach_grad()
        with mx.autograd.record():
            y = mx.nd.FullyConnected(x, w, num_hidden=2, no_bias=True)
        y.backward()
        assert w.grad.shape == (2, 3) and not w.grad.asnumpy().any()
