"""mx.rnn's convolutional cells (ConvRNNCell, ConvLSTMCell, ConvGRUCell) against MXNet 1.9.1:
the unrolled symbol's JSON, byte for byte, its state_info, and the forward results on fixed
inputs and parameters (tests/data/rnn/conv_cells_golden.*, written by gen_conv_cells.py)."""
import json
import os
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rnn")
sys.path.insert(0, HERE)
import gen_conv_cells as cases  # noqa: E402

GOLDEN = json.load(open(os.path.join(HERE, "conv_cells_golden.json")))
ARRAYS = np.load(os.path.join(HERE, "conv_cells_golden.npz"))


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_unrolled_graph_is_mxnets(name):
    cls, kwargs = cases.CASES[name]
    sym, info = cases.build(mx, cls, kwargs)
    assert sym.tojson() == GOLDEN[name]["json"]
    assert [dict(i, shape=list(i["shape"])) for i in info] == GOLDEN[name]["state_info"]


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_forward_matches_mxnet(name):
    cls, kwargs = cases.CASES[name]
    sym, _ = cases.build(mx, cls, kwargs)
    shape = (kwargs["input_shape"][0], cases.STEPS) + tuple(kwargs["input_shape"][1:])
    exe = sym.simple_bind(mx.cpu(), data=shape)
    for key, arr in exe.arg_dict.items():
        arr[:] = ARRAYS["%s/in/%s" % (name, key)]
    outs = exe.forward()
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out.asnumpy(), ARRAYS["%s/out%d" % (name, i)], rtol=1e-5,
                                   atol=1e-6, err_msg="%s output %d" % (name, i))


def test_a_conv_lstm_trains_and_packs_its_weights():
    cell = mx.rnn.ConvLSTMCell(input_shape=(4, 1, 6, 6), num_hidden=2, prefix="c_")
    outputs, _ = cell.unroll(3, mx.sym.var("data"), layout="NTC", merge_outputs=True)
    pred = mx.sym.mean(outputs, axis=(1, 2, 3, 4))
    net = mx.sym.LinearRegressionOutput(mx.sym.reshape(pred, shape=(-1, 1)), name="lro")
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (16, 3, 1, 6, 6)).astype(np.float32)
    y = x.mean(axis=(1, 2, 3, 4)).reshape(-1, 1) * 0.5
    mod = mx.mod.Module(net, label_names=("lro_label",))
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="lro_label")
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.1},
            initializer=mx.init.Xavier())
    args = {k: v for k, v in mod.get_params()[0].items()}
    unpacked = cell.unpack_weights(args)
    assert {"c_i2h_i_weight", "c_h2h_o_bias"} <= set(unpacked)
    assert unpacked["c_i2h_f_weight"].shape == (2, 1, 3, 3)
    repacked = cell.pack_weights(unpacked)
    for key in args:
        np.testing.assert_array_equal(repacked[key].asnumpy(), args[key].asnumpy())


def test_even_h2h_kernels_are_refused():
    with pytest.raises(ValueError, match="h2h_kernel must have odd sizes"):
        mx.rnn.ConvRNNCell(input_shape=(1, 1, 4, 4), num_hidden=2, h2h_kernel=(2, 2))
