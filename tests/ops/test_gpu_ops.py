"""Operators on every backend: a float32 run on `ctx` (cpu(0), and gpu(0) where present)
against a float64 run on the CPU, outputs and gradients (tolerance table in conftest.py)."""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.test_utils import check_consistency

from ..conftest import GPU_TOLERANCES
from .harness import check_case_on

V = mx.sym.Variable


def _fc():
    return mx.sym.FullyConnected(V("data"), num_hidden=5, name="fc"), {"data": (4, 7)}


def _conv():
    return (mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=4, pad=(1, 1),
                               stride=(1, 1), name="conv"), {"data": (2, 3, 6, 6)})


def _conv_wide():  # output rows >= 16 wide: the channels-batch work layout
    return (mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=3, num_group=1,
                               name="conv"), {"data": (2, 2, 5, 20)})


def _conv_group():
    return (mx.sym.Convolution(V("data"), kernel=(2, 2), num_filter=4, num_group=2,
                               stride=(2, 2), name="conv"), {"data": (2, 4, 6, 6)})


def _deconv():
    return (mx.sym.Deconvolution(V("data"), kernel=(3, 3), num_filter=4, stride=(2, 2),
                                 pad=(1, 1), adj=(1, 1), no_bias=False, name="deconv"),
            {"data": (2, 3, 5, 5)})


def _pool_max():
    return (mx.sym.Pooling(V("data"), kernel=(2, 2), stride=(2, 2), pool_type="max"),
            {"data": (2, 3, 6, 6)})


def _pool_avg_pad():
    return (mx.sym.Pooling(V("data"), kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                           pool_type="avg"), {"data": (2, 2, 7, 7)})


def _activations():
    x = V("data")
    out = mx.sym.Activation(x, act_type="relu") + mx.sym.Activation(x, act_type="tanh") \
        + mx.sym.Activation(x, act_type="sigmoid") + mx.sym.Activation(x, act_type="softrelu")
    return out, {"data": (3, 8)}


def _softmax_output():
    net = mx.sym.FullyConnected(V("data"), num_hidden=6, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (5, 4), "softmax_label": (5,)}


def _softmax_output_ignore():
    net = mx.sym.FullyConnected(V("data"), num_hidden=6, name="fc")
    return (mx.sym.SoftmaxOutput(net, use_ignore=True, ignore_label=0, normalization="valid",
                                 name="softmax"), {"data": (5, 4), "softmax_label": (5,)})


def _batchnorm():
    return (mx.sym.BatchNorm(V("data"), fix_gamma=False, name="bn"), {"data": (4, 3, 5, 5)})


def _embedding():
    emb = mx.sym.Embedding(V("data"), input_dim=10, output_dim=4, name="emb")
    return mx.sym.FullyConnected(emb, num_hidden=3, name="fc"), {"data": (6, 2)}


def _rnn_lstm():
    return (mx.sym.RNN(V("data"), V("params"), V("state"), V("state_cell"), state_size=5,
                       num_layers=1, mode="lstm", name="rnn"),
            {"data": (4, 3, 6), "state": (1, 3, 5), "state_cell": (1, 3, 5)})


def _elementwise():
    a, b = V("a"), V("b")
    return (mx.sym.exp(a) * b - mx.sym.sqrt(mx.sym.abs(a) + 1) / (b * b + 1),
            {"a": (3, 4), "b": (3, 4)})


def _broadcast():
    a, b = V("a"), V("b")
    return (mx.sym.broadcast_mul(a, b) + mx.sym.broadcast_sub(a, b),
            {"a": (3, 1, 4), "b": (1, 5, 4)})


def _reduce():
    a = V("a")
    return (mx.sym.sum(a, axis=1) + mx.sym.mean(a, axis=1) + mx.sym.max(a, axis=1),
            {"a": (3, 5, 2)})


def _softmax_log_softmax():
    a = V("a")
    return mx.sym.softmax(a, axis=-1) + mx.sym.log_softmax(a, axis=-1), {"a": (4, 6)}


CASES = {f.__name__[1:]: f for f in (
    _fc, _conv, _conv_wide, _conv_group, _deconv, _pool_max, _pool_avg_pad, _activations,
    _softmax_output, _softmax_output_ignore, _batchnorm, _embedding, _rnn_lstm, _elementwise,
    _broadcast, _reduce, _softmax_log_softmax)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_on_backend_matches_float64_cpu(name, ctx):
    sym, shapes = CASES[name]()
    f64 = {n: np.float64 for n in sym.list_arguments() + sym.list_auxiliary_states()}
    tol = GPU_TOLERANCES["op_vs_float64_cpu"]
    tols = {np.dtype(np.float64): 0.0, np.dtype(np.float32): tol}
    truth = check_consistency(
        sym, [dict(ctx=mx.cpu(0), type_dict=f64, **shapes), dict(ctx=ctx, **shapes)],
        scale=0.5, rtol=tols, atol=tols)
    # the reference (the float64 run) gave finite numbers, so the comparison meant something
    assert all(np.isfinite(v.asnumpy()).all() for v in truth.values() if v is not None)


def test_softmax_output_out_of_range_labels_subtract_nothing(ctx):
    """Labels outside [0, classes) give the plain probabilities as gradient on every backend
    (the GPU path masks them instead of checking the range on the host)."""
    net = mx.sym.SoftmaxOutput(V("data"), name="softmax")
    exe = net.simple_bind(ctx, data=(4, 3), softmax_label=(4,))
    x = np.random.RandomState(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["softmax_label"][:] = np.array([0, 5, -1, 2], np.float32)
    p = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    want = p.copy()
    want[0, 0] -= 1
    want[3, 2] -= 1
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), want, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- the device harness itself

def _all_table_cases():
    from . import test_elemwise, test_loss, test_nn, test_reduce, test_rnn_op, test_shape
    return (list(test_elemwise.ALL_CASES) + list(test_nn.CASES) + list(test_reduce.ALL_CASES)
            + list(test_shape.CASES) + list(test_loss.CASES) + list(test_rnn_op.CASES))


@pytest.mark.parametrize("case", _all_table_cases(), ids=str)
def test_device_path_of_the_harness_on_cpu(case):
    """The path that runs every table case on a GPU (inputs moved by to_context, forward and
    backward through xp_for(ctx), results compared on the host), exercised on cpu(0) so that
    it is known to work where no GPU is present."""
    with np.errstate(all="ignore"):
        check_case_on(case, mx.cpu(0))


def test_convolution_and_pooling_take_cudnn_where_it_loads(ctx):
    """On a GPU whose CuPy has its cuDNN wrapper (CuPy <= 13 with a loadable libcudnn), or
    with nvidia-cudnn-frontend, the plan runs the cuDNN variants, elsewhere the im2col ones;
    either way the results match the float64 CPU run (the cases above), and here the choice
    itself is checked."""
    from minimod.kernels import pool_gpu
    from minimod.kernels.cudnn import CudnnConvolution, CudnnPooling, cudnn_for
    x = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=4, name="c")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="avg")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="max")
    exe = x.simple_bind(ctx, data=(2, 3, 10, 10))
    kinds = {n.name: type(n.op) for n in exe._plan.graph.nodes if n.op is not None}
    ops = cudnn_for(ctx)
    with_cudnn = ops is not None
    assert (kinds["c"] is CudnnConvolution) == with_cudnn
    # nvidia-cudnn-frontend has no pooling backward: Pooling keeps its path there (ops.pools)
    assert (kinds["avg"] is CudnnPooling) == (with_cudnn and ops.pools)
    # max pooling prefers Pooling's own GPU kernels, where they pass their check there
    pool = next(n.op for n in exe._plan.graph.nodes if n.name == "max")
    ours = pool_gpu.preferred(pool, ctx, "float32")
    assert ours == (ctx.device_type == "gpu")
    assert (kinds["max"] is CudnnPooling) == (with_cudnn and ops.pools and not ours)
    assert with_cudnn == backend.cudnn_status().startswith("cuDNN") or ctx.device_type == "cpu"
