"""The cuDNN variants of Convolution and Pooling, bound on the CPU with a NumPy stand-in for
CuPy's cuDNN wrapper (tests/ops/fake_cudnn.py).

On a GPU where CuPy's wrapper loads, the device pass swaps these variants in (minimod/kernels/
cudnn.py); their backward reads the convolution's input (not im2col columns) and the pooling's
input and output (not a mask). Here the same swap is forced on the CPU by handing the variants
a `CudnnOps` around the stand-in, and the whole executor (device pass, gradient pass, memory
plan, run) must give what the ordinary CPU path gives. The GPU run of the real wrapper is in
test_gpu_ops.py (skipped without a GPU).
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.kernels import cudnn
from minimod.kernels.cudnn import CudnnConvolution, CudnnDeconvolution, CudnnPooling

from ..ops import fake_cudnn

V = mx.sym.Variable


@pytest.fixture
def fake_cudnn_on_cpu(monkeypatch):
    ops = cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    fake_cudnn.CALLS.clear()
    return ops


def _lenet_block():
    x = mx.sym.Convolution(V("data"), kernel=(5, 5), num_filter=6, name="c1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="p1")
    x = mx.sym.Activation(x, act_type="tanh")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="c2")
    return x, {"data": (3, 2, 12, 12)}


def _grouped_strided_dilated():
    x = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=6, num_group=2, stride=(2, 1),
                           dilate=(1, 2), pad=(1, 2), no_bias=True, name="c")
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="p")
    return x, {"data": (2, 4, 9, 10)}


def _one_d():
    x = mx.sym.Convolution(V("data"), kernel=(3,), num_filter=5, pad=(1,), name="c")
    x = mx.sym.Pooling(x, kernel=(3,), stride=(2,), pad=(1,), pool_type="avg",
                       count_include_pad=False, name="p")
    return x, {"data": (2, 3, 11)}


def _three_d():
    x = mx.sym.Convolution(V("data"), kernel=(2, 3, 2), num_filter=3, name="c")
    x = mx.sym.Pooling(x, kernel=(2, 2, 2), stride=(1, 2, 2), pool_type="avg", name="p")
    return x, {"data": (2, 2, 5, 7, 6)}


def _global_avg():
    x = mx.sym.Convolution(V("data"), kernel=(1, 1), num_filter=4, name="c")
    x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg", name="p")
    return x, {"data": (3, 2, 5, 4)}


def _deconvolutions():
    x = mx.sym.Deconvolution(V("data"), kernel=(3, 3), num_filter=4, stride=(2, 2), pad=(1, 1),
                             adj=(1, 0), no_bias=False, name="d1")
    x = mx.sym.Deconvolution(x, kernel=(2, 2), num_filter=4, num_group=2, stride=(2, 2),
                             target_shape=(20, 18), name="d2")
    return mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), name="p"), {"data": (2, 2, 5, 5)}


CASES = {"lenet_block": _lenet_block, "grouped_strided_dilated": _grouped_strided_dilated,
         "one_d": _one_d, "three_d": _three_d, "global_avg": _global_avg,
         "deconvolutions": _deconvolutions}
VARIANTS = {"Convolution": CudnnConvolution, "Deconvolution": CudnnDeconvolution,
            "Pooling": CudnnPooling}


def _run(sym, shapes, seed=0):
    """Forward (training) and backward with fixed values; outputs, gradients, executor."""
    exe = sym.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(seed)
    for name in sorted(exe.arg_dict):
        exe.arg_dict[name][:] = rng.uniform(-1, 1, exe.arg_dict[name].shape)
    out = exe.forward(is_train=True)[0].asnumpy()
    head = rng.uniform(-1, 1, out.shape).astype(np.float32)
    exe.backward(out_grads=[mx.nd.array(head)])
    return out, {k: v.asnumpy() for k, v in exe.grad_dict.items()}, exe


def _variant_ops(exe):
    return [type(n.op) for n in exe._plan.graph.nodes[:exe._plan.num_forward_nodes]
            if n.op is not None]


@pytest.mark.parametrize("case", sorted(CASES))
def test_cudnn_variants_equal_the_cpu_path(case, monkeypatch):
    sym, shapes = CASES[case]()
    want_out, want_grads, plain = _run(sym, shapes)
    assert CudnnConvolution not in _variant_ops(plain)
    ops = cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib)
    monkeypatch.setattr(cudnn, "cudnn_for", lambda ctx: ops)
    fake_cudnn.CALLS.clear()
    got_out, got_grads, exe = _run(sym, shapes)
    # every convolution, deconvolution and pooling node runs its cuDNN variant
    fwd = exe._plan.graph.nodes[:exe._plan.num_forward_nodes]
    assert all(type(n.op) is VARIANTS[n.op.name] for n in fwd
               if n.op is not None and n.op.name in VARIANTS)
    # every cuDNN entry point ran: forward, both convolution gradients, pooling's gradient
    assert {"convolution_forward", "convolution_backward_data", "convolution_backward_filter",
            "pooling_forward", "pooling_backward"} <= set(fake_cudnn.CALLS)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-4, atol=1e-5)
    assert set(got_grads) == set(want_grads)
    for name in want_grads:
        np.testing.assert_allclose(got_grads[name], want_grads[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_cudnn_plan_keeps_the_data_not_the_columns(fake_cudnn_on_cpu):
    sym = mx.sym.Convolution(V("data"), kernel=(5, 5), num_filter=20, name="conv")
    sym = mx.sym.Pooling(sym, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    shapes = {"data": (16, 1, 28, 28)}
    exe = sym.simple_bind(mx.cpu(), **shapes)
    graph, plan = exe._plan.graph, exe._plan
    names = {n.name: (nid, n) for nid, n in enumerate(graph.nodes)}
    conv_id, conv = names["conv"]
    assert isinstance(conv.op, CudnnConvolution)
    # the hidden columns and mask entries shrink to one element
    assert plan.shapes[graph.row_ptr[conv_id] + 1] == (1,)
    pool_id, pool = names["pool"]
    assert plan.shapes[graph.row_ptr[pool_id] + 1] == (1,)
    # backward reads the convolution's data and the pooling's input and output
    assert names["conv_backward"][1].op.arguments() == ["head_grad_output", "data", "weight"]
    assert names["pool_backward"][1].op.arguments() == ["head_grad_output", "data",
                                                         "out_output"]
    # no block of the plan is as large as the im2col plan's columns (25 taps x 24 x 24 x 16)
    columns_bytes = 25 * 24 * 24 * 16 * 4
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cudnn, "cudnn_for", lambda ctx: None)
        im2col = sym.simple_bind(mx.cpu(), **shapes)._plan
    assert columns_bytes in im2col.memory.block_bytes
    assert max(plan.memory.block_bytes) < columns_bytes
    assert plan.memory.planned_bytes < im2col.memory.planned_bytes


def test_cudnn_off_and_unsupported_windows_keep_the_numpy_path(fake_cudnn_on_cpu):
    x = mx.sym.Convolution(V("data"), kernel=(3, 3), num_filter=2, cudnn_off=True, name="c")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pooling_convention="full", name="p")
    x = mx.sym.Pooling(x, kernel=(1, 1), pool_type="sum", name="s")
    exe = x.simple_bind(mx.cpu(), data=(1, 1, 7, 7))
    kinds = _variant_ops(exe)
    assert CudnnConvolution not in kinds and CudnnPooling not in kinds
    # integer data is not cuDNN's either
    conv = mx.sym.Convolution(V("data"), kernel=(1, 1), num_filter=1, name="c")
    exe = conv.simple_bind(mx.cpu(), data=(1, 1, 2, 2), type_dict={"data": np.int32})
    assert CudnnConvolution not in _variant_ops(exe)


def test_without_cudnn_the_plan_runs_the_symbols_own_graph():
    """On a CPU context nothing is swapped: the plan's forward nodes are the symbol's."""
    sym, shapes = _lenet_block()
    exe = sym.simple_bind(mx.cpu(), **shapes)
    assert cudnn.cudnn_for(mx.cpu()) is None
    fwd = exe._plan.graph.nodes[:exe._plan.num_forward_nodes]
    assert all(a is b for a, b in zip(fwd, sym._graph.nodes))


def test_cudnn_reshape_and_module_training_use_the_variant(fake_cudnn_on_cpu):
    """Executor.reshape recompiles for its context, and a Module trains through the variant to
    the parameters the CPU path reaches."""
    sym, _ = _lenet_block()
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(sym, num_hidden=3, name="fc"),
                               name="softmax")
    rng = np.random.RandomState(1)
    data = rng.uniform(-1, 1, (8, 2, 12, 12)).astype(np.float32)
    label = rng.randint(0, 3, 8).astype(np.float32)

    def train(patch):
        with pytest.MonkeyPatch.context() as mp:
            if not patch:
                mp.setattr(cudnn, "cudnn_for", lambda ctx: None)
            mx.random.seed(3)
            mod = mx.mod.Module(net, context=mx.cpu())
            it = mx.io.NDArrayIter(data, label, batch_size=4)
            mod.fit(it, num_epoch=2, optimizer="sgd",
                    optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                    initializer=mx.init.Xavier())
            exe = mod._exec_group.execs[0]
            reshaped = exe.reshape(data=(2, 2, 12, 12), softmax_label=(2,))
            return mod.get_params()[0], _variant_ops(exe), _variant_ops(reshaped)

    want, plain_kinds, _ = train(False)
    got, kinds, reshaped_kinds = train(True)
    assert CudnnConvolution not in plain_kinds
    assert CudnnConvolution in kinds and CudnnConvolution in reshaped_kinds
    for name in want:
        np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=name)


def test_cudnn_ops_copy_back_into_a_strided_destination():
    """cuDNN writes only C-contiguous arrays: a strided destination gets a copy."""
    ops = cudnn.CudnnOps(fake_cudnn, fake_cudnn.Lib)
    rng = np.random.RandomState(2)
    x = rng.uniform(-1, 1, (2, 3, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    big = np.zeros((2, 4, 4, 8), np.float32)
    y = big[..., ::2]
    assert not y.flags.c_contiguous
    ops.conv_forward(x, w, None, y, (0, 0), (1, 1), (1, 1), 1)
    want = np.zeros((2, 4, 4, 4), np.float32)
    ops.conv_forward(x, w, None, want, (0, 0), (1, 1), (1, 1), 1)
    np.testing.assert_array_equal(y, want)
    assert not big[..., 1::2].any()


def test_cudnn_status_names_why_not_here():
    text = backend.cudnn_status()
    if backend.gpu_count() == 0:
        assert text.startswith("no cuDNN:")
    else:
        assert "cuDNN" in text
