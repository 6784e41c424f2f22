"""Which layers a CUDA graph holds: a training step of a small net around each common layer
is captured on a GPU and gives the eager step's outputs and gradients bit for bit.

Needs a GPU or the strict CuPy stand-in (tests/test_fake_gpu.py runs this file on it). A
layer whose step read the device on the host, copied host data in, synchronised or drew from
CuPy's generator would be refused there and stay eager: the status check names it.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend

from ..conftest import needs_gpu

S = mx.sym
DATA = S.Variable("data")

# name -> (layer on DATA, data shape, extra argument shapes, integer data below this bound)
LAYERS = {
    "Convolution": (lambda: S.Convolution(DATA, kernel=(3, 3), num_filter=4, pad=(1, 1)),
                    (2, 3, 6, 6), {}, None),
    "Deconvolution": (lambda: S.Deconvolution(DATA, kernel=(3, 3), num_filter=4,
                                              stride=(2, 2)), (2, 3, 5, 5), {}, None),
    "max Pooling": (lambda: S.Pooling(DATA, kernel=(2, 2), stride=(2, 2), pool_type="max"),
                    (2, 3, 6, 6), {}, None),
    "avg Pooling, padded": (lambda: S.Pooling(DATA, kernel=(3, 3), pad=(1, 1),
                                              pool_type="avg"), (2, 3, 6, 6), {}, None),
    "global Pooling": (lambda: S.Pooling(DATA, kernel=(1, 1), global_pool=True,
                                         pool_type="avg"), (2, 3, 6, 6), {}, None),
    "BatchNorm": (lambda: S.BatchNorm(DATA, fix_gamma=False), (4, 3, 5, 5), {}, None),
    "LayerNorm": (lambda: S.LayerNorm(DATA), (4, 6), {}, None),
    "InstanceNorm": (lambda: S.InstanceNorm(DATA), (4, 3, 5), {}, None),
    "Embedding": (lambda: S.Embedding(DATA, input_dim=10, output_dim=4), (4, 5), {}, 10),
    "take": (lambda: S.take(S.Variable("table"), DATA), (4,), {"table": (10, 4)}, 10),
    "batch_dot": (lambda: S.batch_dot(S.reshape(DATA, shape=(4, 2, 3)),
                                      S.reshape(DATA, shape=(4, 3, 2))), (4, 6), {}, None),
    "self-attention (interleaved)": (
        lambda: S.contrib.interleaved_matmul_selfatt_valatt(
            DATA, S.softmax(S.contrib.interleaved_matmul_selfatt_qk(DATA, heads=2), axis=-1),
            heads=2), (3, 2, 12), {}, None),
    "dot, transposed": (lambda: S.dot(DATA, S.Variable("w2"), transpose_b=True), (4, 6),
                        {"w2": (5, 6)}, None),
    "LeakyReLU prelu": (lambda: S.LeakyReLU(DATA, act_type="prelu"), (4, 6), {}, None),
    "LeakyReLU elu": (lambda: S.LeakyReLU(DATA, act_type="elu"), (4, 6), {}, None),
    "softrelu": (lambda: S.Activation(DATA, act_type="softrelu"), (4, 6), {}, None),
    "Concat of SliceChannel": (lambda: S.Concat(*S.SliceChannel(DATA, num_outputs=2, axis=1),
                                                dim=1), (4, 6), {}, None),
    "Concat of 12": (lambda: S.Concat(*S.SliceChannel(DATA, num_outputs=12, axis=1), dim=1),
                     (4, 12), {}, None),
    "stack of 10": (lambda: S.stack(*S.SliceChannel(DATA, num_outputs=10, axis=1,
                                                    squeeze_axis=True), axis=1),
                    (4, 10), {}, None),
    "L2Normalization": (lambda: S.L2Normalization(DATA), (4, 6), {}, None),
    "UpSampling": (lambda: S.UpSampling(DATA, scale=2, sample_type="nearest"), (2, 3, 4, 4),
                   {}, None),
    "Pad": (lambda: S.Pad(DATA, mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
            (2, 3, 4, 4), {}, None),
    "SequenceMask": (lambda: S.SequenceMask(DATA, S.Variable("lengths"),
                                            use_sequence_length=True), (3, 4, 5),
                     {"lengths": (4,)}, None),
    "SequenceLast": (lambda: S.SequenceLast(DATA), (3, 4, 5), {}, None),
    "log_softmax": (lambda: S.log_softmax(DATA), (4, 6), {}, None),
    "norm": (lambda: S.broadcast_div(DATA, S.norm(DATA, axis=1, keepdims=True)), (4, 6), {},
             None),
    "where": (lambda: S.where(DATA > 0, DATA, DATA * 2), (4, 6), {}, None),
    "GRU (RNN op)": (lambda: S.RNN(DATA, S.Variable("p"), S.Variable("s"), state_size=4,
                                   num_layers=1, mode="gru"), (3, 2, 5), {}, None),
}

# name -> (loss net on DATA, data shape)
LOSSES = {
    "LinearRegressionOutput": lambda: S.LinearRegressionOutput(
        S.FullyConnected(DATA, num_hidden=1), name="lro"),
    "LogisticRegressionOutput": lambda: S.LogisticRegressionOutput(
        S.FullyConnected(DATA, num_hidden=1), name="lgo"),
    "MakeLoss": lambda: S.MakeLoss(S.sum(S.square(S.FullyConnected(DATA, num_hidden=2)))),
    "SoftmaxOutput valid, ignore": lambda: S.SoftmaxOutput(
        S.FullyConnected(DATA, num_hidden=3), normalization="valid", use_ignore=True,
        name="softmax"),
    "softmax_cross_entropy": lambda: S.MakeLoss(S.softmax_cross_entropy(
        S.FullyConnected(DATA, num_hidden=3), S.Variable("softmax_label"))),
}


def _head(layer):
    return S.SoftmaxOutput(S.FullyConnected(S.flatten(layer), num_hidden=3, name="head"),
                           name="softmax")


def _run(net, shapes, int_bound, graphs, monkeypatch, steps=4):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
    exe = net.simple_bind(mx.gpu(0), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label" or (name == "data" and int_bound):
            arr[:] = rng.randint(0, int_bound or 3, arr.shape)
        elif name == "lengths":
            arr[:] = rng.randint(1, shapes["data"][0] + 1, arr.shape)
        else:
            arr[:] = rng.uniform(-1, 1, arr.shape)
    seen = []
    for _ in range(steps):
        exe.forward_backward()
        seen.append([o.asnumpy() for o in exe.outputs]
                    + [g.asnumpy() for g in exe.grad_arrays if g is not None])
    return seen, exe.graph_status()


def _check(net, shapes, int_bound, monkeypatch):
    want, _ = _run(net, shapes, int_bound, False, monkeypatch)
    got, status = _run(net, shapes, int_bound, True, monkeypatch)
    assert status == {("train", True): "graph"}, status
    # on a GPU, atomics (the scatter-adds of Embedding's and take's gradients) may make two
    # eager runs differ: then the graph is held to that spread, else to every bit
    exact = hasattr(backend._cupy, "host_reads") or all(
        np.array_equal(x, y) for a, b in zip(want, _run(net, shapes, int_bound, False,
                                                         monkeypatch)[0])
        for x, y in zip(a, b))
    for step, (a, b) in enumerate(zip(want, got)):
        for x, y in zip(a, b):
            if exact:
                np.testing.assert_array_equal(y, x, err_msg="step %d" % step)
            else:
                np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6, err_msg="step %d" % step)


@needs_gpu
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_step_through_the_layer_is_captured_and_equal(layer, monkeypatch):
    build, shape, extra, int_bound = LAYERS[layer]
    _check(_head(build()), dict(extra, data=shape), int_bound, monkeypatch)


@needs_gpu
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_a_step_ending_in_the_loss_is_captured_and_equal(loss, monkeypatch):
    _check(LOSSES[loss](), {"data": (4, 6)}, None, monkeypatch)
