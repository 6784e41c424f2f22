"""Fused kernels equal the unfused graphs they stand for.

minimod fuses elementwise work where it pays on NumPy: the RNN op runs a whole LSTM/GRU layer
(all gates of a step in a few whole-block passes) instead of a graph of cells, SoftmaxOutput
writes the cross-entropy gradient straight from the probabilities, and the optimizer updates
a whole flat parameter buffer at once (tests/module/test_flat_update.py). Here the first two
are checked against the unfused graphs, forward and backward.
"""
import numpy as np
import pytest

import minimod as mx


@pytest.mark.parametrize("mode,layers,bidirectional", [("lstm", 2, True), ("gru", 1, False),
                                                       ("lstm", 1, False),
                                                       ("rnn_tanh", 2, False)])
def test_fused_rnn_equals_unrolled_cells_forward_and_backward(mode, layers, bidirectional):
    steps, batch, feat, hidden = 4, 3, 5, 6
    fused = mx.rnn.FusedRNNCell(hidden, num_layers=layers, mode=mode,
                                bidirectional=bidirectional, prefix="f_")
    with mx.name.NameManager():
        fsym, _ = fused.unroll(steps, mx.sym.Variable("data"), layout="TNC",
                               merge_outputs=True)
    with mx.name.NameManager():
        usym, _ = fused.unfuse().unroll(steps, mx.sym.Variable("data"), layout="TNC",
                                        merge_outputs=True)
    # the same scalar loss on both: sum(output * projection)
    rng = np.random.RandomState(7)
    data = rng.uniform(-1, 1, (steps, batch, feat)).astype("float32")
    fexe = fsym.simple_bind(mx.cpu(), data=data.shape)
    out_shape = fexe.outputs[0].shape
    proj = rng.uniform(-1, 1, out_shape).astype("float32")
    flat = rng.uniform(-0.5, 0.5, fexe.arg_dict["f_parameters"].shape).astype("float32")
    fexe.arg_dict["f_parameters"][:] = flat
    fexe.arg_dict["data"][:] = data
    f_out = fexe.forward(is_train=True)[0].asnumpy()
    fexe.backward(out_grads=[mx.nd.array(proj)])
    f_dparams = fexe.grad_dict["f_parameters"].asnumpy()
    f_ddata = fexe.grad_dict["data"].asnumpy()

    plain = fused.unfuse().pack_weights(fused.unpack_weights({"f_parameters": mx.nd.array(flat)}))
    uexe = usym.simple_bind(mx.cpu(), data=data.shape)
    uexe.arg_dict["data"][:] = data
    for key, value in plain.items():
        uexe.arg_dict[key][:] = value
    u_out = uexe.forward(is_train=True)[0].asnumpy()
    uexe.backward(out_grads=[mx.nd.array(proj)])
    np.testing.assert_allclose(u_out, f_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(uexe.grad_dict["data"].asnumpy(), f_ddata, rtol=1e-4,
                               atol=1e-5)
    # the unfused cells' weight gradients, packed the fused way, are the fused gradient
    u_grads = {k: uexe.grad_dict[k] for k in plain}
    packed = fused.pack_weights(fused.unfuse().unpack_weights(u_grads))["f_parameters"]
    np.testing.assert_allclose(packed.asnumpy(), f_dparams, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("normalization", ["null", "batch", "valid"])
def test_softmax_output_gradient_equals_softmax_and_cross_entropy_graph(normalization):
    rng = np.random.RandomState(3)
    x = rng.uniform(-2, 2, (6, 5)).astype("float32")
    label = rng.randint(0, 5, 6).astype("float32")
    fused = mx.sym.SoftmaxOutput(mx.sym.Variable("data"), mx.sym.Variable("label"),
                                 normalization=normalization, name="sm")
    exe = fused.simple_bind(mx.cpu(), data=x.shape, label=label.shape)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["label"][:] = label
    probs = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    # unfused: -sum(log(softmax(x))[label]) / n, differentiated by the executor
    data = mx.sym.Variable("data")
    picked = mx.sym.pick(mx.sym.log_softmax(data, axis=1), mx.sym.Variable("label"), axis=1)
    scale = {"null": 1.0, "batch": 1.0 / 6, "valid": 1.0 / 6}[normalization]
    loss = mx.sym.MakeLoss(mx.sym.sum(picked) * -scale)
    uexe = loss.simple_bind(mx.cpu(), data=x.shape, label=label.shape)
    uexe.arg_dict["data"][:] = x
    uexe.arg_dict["label"][:] = label
    uexe.forward(is_train=True)
    uexe.backward()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(probs, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(),
                               uexe.grad_dict["data"].asnumpy(), rtol=1e-5, atol=1e-6)
