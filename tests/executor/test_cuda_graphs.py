"""CUDA graphs: executors capture their steps after a warm-up and replay them, with results
bit-identical to eager runs; GEMMs go through our own cuBLAS handle, which capture allows
(its layouts and calls: tests/test_gemm.py).

The capture cases need a GPU or the strict CuPy stand-in (tests/test_fake_gpu.py runs this file
on it), where a capture records kernels without running them, a launch runs the recording,
temporaries made during capture are poisoned until the graph fills them, and a host read,
host-to-device copy or synchronisation during capture raises, as on a GPU.
"""
import os
import sys
import types

import numpy as np
import pytest

import minimod as mx
from minimod import backend, cuda_graph, gemm
from minimod.executor import graphs as exe_graphs
from minimod.flat import update_graph_status

from ..conftest import needs_gpu

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


def test_capture_refusals_name_what():
    assert not cuda_graph.capturing()
    cuda_graph.forbid_in_capture("anything")  # no capture: nothing to refuse
    cuda_graph._CAPTURING[0] = True
    try:
        with pytest.raises(cuda_graph.CaptureError, match="drawing random numbers"):
            backend.rng(types.SimpleNamespace())
        with pytest.raises(cuda_graph.CaptureError, match="cupy.matmul"):
            gemm.matmul_through(None, types.SimpleNamespace(matmul=np.matmul),
                                np.ones((2, 2)), np.ones((2, 2)))
    finally:
        cuda_graph._CAPTURING[0] = False


def test_cpu_executors_never_capture(monkeypatch):
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    exe = sym.simple_bind(mx.cpu(), data=(2, 4))
    for _ in range(3):
        exe.forward(is_train=False)
    assert exe.graph_status() == {"all": "eager: not on a GPU"}


# ----------------------------------------------------------------------------- on a GPU

def _workloads():
    sys.path.insert(0, BENCH)
    try:
        import workloads
    finally:
        sys.path.remove(BENCH)
    return workloads


def _train(net, graphs: bool, monkeypatch, steps=6, lr_change_at=3):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
    wl = _workloads()
    mod, batches = wl.make_module(mx, net, 8, context=mx.gpu(0))
    for b in batches:
        b.data = [d.as_in_context(mx.gpu(0)) for d in b.data]
        b.label = [lab.as_in_context(mx.gpu(0)) for lab in b.label]
    outputs = []
    for i in range(steps):
        if i == lr_change_at:
            getattr(mod, "_curr_module", mod)._optimizer.lr *= 0.5  # read by the next update
        mod.forward_backward(batches[i % len(batches)])
        mod.update()
        outputs.append(mod.get_outputs()[0].asnumpy())
    args, aux = mod.get_params()
    return mod, outputs, {k: v.asnumpy() for k, v in {**args, **aux}.items()}


def _executor(mod):
    inner = getattr(mod, "_curr_module", mod)
    return inner._exec_group.execs[0]


@needs_gpu
@pytest.mark.parametrize("net", ["mlp", "lenet", "lstm", "lstm_fused"])
def test_training_with_graphs_is_bit_identical(net, monkeypatch):
    _, want_out, want = _train(net, False, monkeypatch)
    # on a GPU, atomics (Embedding's scatter-add) can make two eager runs differ; then graphs
    # are held to that run-to-run spread instead of to every bit
    _, again_out, again = _train(net, False, monkeypatch)
    exact = all(np.array_equal(again[k], want[k]) for k in want) and all(
        np.array_equal(a, b) for a, b in zip(again_out, want_out))
    assert exact or not hasattr(backend._cupy, "host_reads")  # the stand-in is exact
    same = np.testing.assert_array_equal if exact else (
        lambda got, ref, err_msg: np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5,
                                                             err_msg=err_msg))
    if hasattr(backend._cupy, "host_reads"):
        from tests import fake_cuda_graphs
        fake_cuda_graphs.reset_allocations()
    mod, got_out, got = _train(net, True, monkeypatch)
    status = _executor(mod).graph_status()
    # nets whose outputs are all losses run one 'train' list; others forward then backward
    assert (status.get(("train", True)) == "graph" or status.get(("forward", True)) ==
            status.get(("backward", True)) == "graph"), status
    assert all(v == "graph" for v in status.values()), status
    # the optimizer's update too: one graph per flat buffer, its scalars in device memory,
    # so the learning rate halved mid-run reached the replays without a new capture
    update = update_graph_status(getattr(mod, "_curr_module", mod)._updater)
    assert update and all(v == "graph" for v in update.values()), update
    assert len(update) == len(_executor(mod).flat_params), update
    for i, (a, b) in enumerate(zip(want_out, got_out)):
        same(b, a, err_msg="step %d output" % i)
    for name in want:
        same(got[name], want[name], err_msg=name)
    if hasattr(backend._cupy, "host_reads"):  # the stand-in notes who allocated in capture
        from tests import fake_cuda_graphs
        assert {who for who, _ in fake_cuda_graphs.allocations()} <= {"private"}


@needs_gpu
def test_inference_forward_is_captured_and_equal(monkeypatch):
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=16,
                                                name="fc1"), act_type="relu"),
        num_hidden=4, name="fc2"), name="softmax")
    results = {}
    for graphs in (False, True):
        monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
        exe = sym.simple_bind(mx.gpu(0), data=(5, 8), grad_req="null")
        rng = np.random.RandomState(1)
        for arr in exe.arg_dict.values():
            arr[:] = rng.uniform(-1, 1, arr.shape)
        outs = []
        for _ in range(4):
            exe.arg_dict["data"][:] = rng.uniform(-1, 1, (5, 8))  # new data each call
            outs.append(exe.forward(is_train=False)[0].asnumpy())
        results[graphs] = outs
        if graphs:
            assert exe.graph_status() == {("forward", False): "graph"}
    for a, b in zip(results[False], results[True]):
        np.testing.assert_array_equal(b, a)


@needs_gpu
def test_steps_that_cannot_be_captured_stay_eager(monkeypatch):
    """A gamma sample draws from CuPy's generator, whose position lives on the host: its step
    is refused, says why, and still trains. (Dropout, uniform and normal draw from
    minimod.device_rng and are captured: tests/executor/test_graph_random.py.)"""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    data = mx.sym.Variable("data")
    noisy = data + mx.sym.random.gamma(alpha=2.0, shape=(4, 6), name="noise")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(noisy, num_hidden=3, name="fc"),
                               name="softmax")
    exe = net.simple_bind(mx.gpu(0), data=(4, 6))
    for arr in exe.arg_dict.values():
        arr[:] = 0.5
    for _ in range(3):
        exe.forward_backward()
    why = exe.graph_status()[("train", True)]
    assert why.startswith("eager: CaptureError") and "random numbers" in why, why
    assert "noise" in why, why
    assert np.isfinite(exe.grad_dict["fc_weight"].asnumpy()).all()


@needs_gpu
def test_monitor_and_switch_keep_steps_eager(monkeypatch):
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "0")
    exe = sym.simple_bind(mx.gpu(0), data=(2, 4))
    exe.forward()
    exe.forward()
    assert exe.graph_status() == {"all": "eager: MINIMOD_CUDA_GRAPHS=0"}
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    exe = sym.simple_bind(mx.gpu(0), data=(2, 4))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    for _ in range(3):
        exe.forward()
    assert exe.graph_status() == {} and len(seen) >= 3  # nothing captured, monitor ran
    exe.set_monitor_callback(None)
    for _ in range(2):
        exe.forward()
    assert exe.graph_status() == {("forward", False): "graph"}
    assert exe_graphs.WARMUP == 1


class _Scale(mx.operator.CustomOp):
    """y = 2x through the host (a custom op's Python code reads its inputs there)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], mx.nd.array(in_data[0].asnumpy() * 2))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], mx.nd.array(out_grad[0].asnumpy() * 2))


@mx.operator.register("graphs_test_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale()


@needs_gpu
def test_a_step_reading_the_host_is_refused_and_stays_correct(monkeypatch):
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1")
    net = mx.sym.FullyConnected(mx.sym.Custom(mx.sym.Variable("data"),
                                              op_type="graphs_test_scale"), num_hidden=2,
                                name="fc")
    exe = net.simple_bind(mx.gpu(0), data=(3, 4), grad_req="null")
    for arr in exe.arg_dict.values():
        arr[:] = 1.0
    for _ in range(3):
        out = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(out, np.full((3, 2), 8.0 + 1.0, np.float32))
    why = exe.graph_status()[("forward", False)]
    assert why.startswith("eager:") and "host" in why, why


@needs_gpu
def test_each_bucket_keeps_its_own_graphs(monkeypatch):
    """A BucketingModule alternating two sequence lengths: each bucket's executor captures
    its own step, and training matches the eager run bit for bit."""
    wl = _workloads()

    def run(graphs):
        monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
        mod, _ = wl.make_module(mx, "lstm", 4, context=mx.gpu(0))
        rng = np.random.RandomState(3)
        for i in range(6):
            seq = (wl.SEQ_LEN, wl.SEQ_LEN - 2)[i % 2]
            data = mx.nd.array(rng.randint(0, 50, (4, seq)), ctx=mx.gpu(0))
            label = mx.nd.array(rng.randint(0, 50, (4, seq)), ctx=mx.gpu(0))
            batch = mx.io.DataBatch(
                data=[data], label=[label], bucket_key=seq,
                provide_data=[mx.io.DataDesc("data", (4, seq))],
                provide_label=[mx.io.DataDesc("softmax_label", (4, seq))])
            mod.forward_backward(batch)
            mod.update()
        args, _ = mod.get_params()
        return mod, {k: v.asnumpy() for k, v in args.items()}

    _, want = run(False)
    mod, got = run(True)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    buckets = mod._buckets
    assert len(buckets) == 2
    for key, bucket in buckets.items():
        status = bucket._exec_group.execs[0].graph_status()
        assert status and all(v == "graph" for v in status.values()), (key, status)
