"""Module, executor group and kvstore paths over backends: training on `ctx` (cpu(0), and
gpu(0) where present) or on several devices gives the parameters of single-device CPU training,
within the float32 table of conftest.py (GPU_TOLERANCES). The CPU cases run everywhere: two CPU
contexts, every kvstore type, bucketing, checkpoints; the GPU ones skip without a GPU."""
import os
import sys

import numpy as np
import pytest

import minimod as mx

from ..conftest import GPU_TOLERANCES, ctx_params, needs_gpu, needs_two_gpus

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "bucketing")
sys.path.insert(0, DATA)
import lm_model  # noqa: E402

TOL = dict(rtol=GPU_TOLERANCES["module_params_vs_cpu"], atol=GPU_TOLERANCES["module_params_vs_cpu"])
BATCH, FEATURES, CLASSES = 8, 6, 3

DEVICE_SETS = [
    pytest.param([mx.cpu(0), mx.cpu(1)], id="cpu0-cpu1"),
    pytest.param([mx.cpu(0), mx.gpu(0)], id="cpu0-gpu0", marks=needs_gpu),
    pytest.param([mx.gpu(0), mx.gpu(1)], id="gpu0-gpu1", marks=needs_two_gpus),
]


def _net():
    with mx.name.NameManager():
        data = mx.sym.Variable("data")
        net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
        net = mx.sym.Activation(net, act_type="tanh", name="act1")
        net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name="fc2")
        return mx.sym.SoftmaxOutput(net, name="softmax")


def _data(batches=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (batches * BATCH, FEATURES)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.5).astype(np.float32)
    return x, y


def _init_params(seed=1):
    """Initial parameters drawn on the host: every device starts from the same numbers (the
    CPU and GPU generators draw different ones)."""
    rng = np.random.RandomState(seed)
    shapes = {"fc1_weight": (10, FEATURES), "fc1_bias": (10,), "fc2_weight": (CLASSES, 10),
              "fc2_bias": (CLASSES,)}
    return {k: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for k, s in shapes.items()}


def _host(params: dict) -> dict:
    return {k: v.asnumpy() for k, v in params.items()}


def _train_steps(context, kvstore="local", steps=4, optimizer_params=None):
    """forward_backward + update on fixed batches; the parameters after `steps` steps."""
    x, y = _data()
    mod = mx.mod.Module(_net(), context=context)
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("softmax_label", (BATCH,))])
    mod.set_params(_init_params(), {})
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd", optimizer_params=optimizer_params or {
        "learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
    for i in range(steps):
        sl = slice((i % 4) * BATCH, (i % 4 + 1) * BATCH)
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x[sl])], [mx.nd.array(y[sl])]))
        mod.update()
    return mod, _host(mod.get_params()[0])


_REFERENCE: dict = {}


def _cpu_reference(steps=4):
    if steps not in _REFERENCE:
        _REFERENCE[steps] = _train_steps(mx.cpu(0), steps=steps)[1]
    return _REFERENCE[steps]


def _assert_params_close(got: dict, want: dict, tol=TOL):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], err_msg=name, **tol)


def _assert_trained(params: dict):
    """The run really trained: every parameter moved away from its initial value."""
    start = _host(_init_params())
    for name, value in params.items():
        assert np.isfinite(value).all(), name
        assert np.abs(value - start[name]).max() > 1e-3, name


# ---------------------------------------------------------------- one device

def test_forward_backward_update_on_ctx_equals_cpu(ctx):
    mod, params = _train_steps(ctx)
    _assert_trained(params)
    _assert_params_close(params, _cpu_reference())
    # the executors and their arrays live on ctx; the outputs come back to the host on asnumpy
    exe = mod._exec_group.execs[0]
    assert all(a.context == ctx for a in exe.arg_arrays)
    assert mod.get_outputs()[0].context == ctx
    assert mod.get_outputs()[0].asnumpy().shape == (BATCH, CLASSES)


def test_fit_on_ctx_equals_fit_on_cpu(ctx):
    x, y = _data()
    results = []
    for context in (mx.cpu(0), ctx):
        it = mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=False)
        mod = mx.mod.Module(_net(), context=context)
        mod.fit(it, num_epoch=3, arg_params=_init_params(), optimizer="sgd",
                optimizer_params={"learning_rate": 0.3, "momentum": 0.9},
                initializer=mx.init.Zero())
        score = dict(mod.score(it, "acc"))["accuracy"]
        results.append((_host(mod.get_params()[0]), score))
    (cpu_params, cpu_acc), (dev_params, dev_acc) = results
    _assert_trained(dev_params)
    _assert_params_close(dev_params, cpu_params)
    assert dev_acc == pytest.approx(cpu_acc, abs=1.0 / len(y))
    assert dev_acc > 0.5  # well above the 1/3 of guessing: fit really learned


def test_predict_on_ctx_equals_cpu(ctx):
    x, _ = _data()
    outs = []
    for context in (mx.cpu(0), ctx):
        mod = mx.mod.Module(_net(), context=context)
        mod.bind(data_shapes=[("data", (BATCH, FEATURES))], for_training=False)
        mod.set_params(_init_params(), {})
        outs.append(mod.predict(mx.io.NDArrayIter(x, batch_size=BATCH)).asnumpy())
    assert outs[1].shape == (len(x), CLASSES)
    np.testing.assert_allclose(outs[1].sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(outs[1], outs[0], **TOL)


# ---------------------------------------------------------------- several devices

@pytest.mark.parametrize("kvstore", ["local", "device", "nccl"])
@pytest.mark.parametrize("contexts", DEVICE_SETS)
def test_data_parallel_training_equals_one_device(contexts, kvstore):
    """Each device gets half the batch; the summed gradients make the single-device step."""
    mod, params = _train_steps(contexts, kvstore=kvstore)
    assert [e._ctx for e in mod._exec_group.execs] == contexts
    _assert_trained(params)
    _assert_params_close(params, _cpu_reference())
    # after an update every device holds the same weights
    first = mod._exec_group.execs[0].arg_dict["fc1_weight"].asnumpy()
    for exe in mod._exec_group.execs[1:]:
        np.testing.assert_allclose(exe.arg_dict["fc1_weight"].asnumpy(), first, **TOL)


@needs_gpu
def test_mixed_cpu_gpu_equals_two_cpus():
    _, two_cpus = _train_steps([mx.cpu(0), mx.cpu(1)])
    _, mixed = _train_steps([mx.cpu(0), mx.gpu(0)])
    _assert_params_close(mixed, two_cpus)


def test_batch_is_sliced_to_each_device_and_outputs_merged():
    """The group slices a batch across its devices and joins the outputs on the first one,
    whatever the devices are (checked on two CPU contexts)."""
    x, y = _data()
    mod = mx.mod.Module(_net(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (BATCH, FEATURES))],
             label_shapes=[("softmax_label", (BATCH,))])
    mod.set_params(_init_params(), {})
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:BATCH])], [mx.nd.array(y[:BATCH])]),
                is_train=False)
    halves = [e.arg_dict["data"].asnumpy() for e in mod._exec_group.execs]
    np.testing.assert_array_equal(np.concatenate(halves), x[:BATCH])
    assert [h.shape[0] for h in halves] == [BATCH // 2, BATCH // 2]
    merged = mod.get_outputs()[0]
    assert merged.context == mx.cpu(0) and merged.shape == (BATCH, CLASSES)
    one = mx.mod.Module(_net(), context=mx.cpu(0))
    one.bind(data_shapes=[("data", (BATCH, FEATURES))], for_training=False)
    one.set_params(_init_params(), {})
    one.forward(mx.io.DataBatch([mx.nd.array(x[:BATCH])], None), is_train=False)
    np.testing.assert_allclose(merged.asnumpy(), one.get_outputs()[0].asnumpy(), rtol=1e-6)


# ---------------------------------------------------------------- bucketing, checkpoints

def test_bucketing_lstm_on_ctx_equals_cpu(ctx):
    results = []
    for context in (mx.cpu(0), ctx):
        mod, _ = lm_model.train(mx, default_key=8, ctx=context)
        results.append((_host(mod.get_params()[0]), lm_model.predictions(mx, mod)))
    (cpu_params, cpu_pred), (dev_params, dev_pred) = results
    assert {"embed_weight", "lstm_l0_i2h_weight", "pred_weight"} <= set(dev_params)
    _assert_params_close(dev_params, cpu_params)
    for key in cpu_pred:
        np.testing.assert_allclose(dev_pred[key], cpu_pred[key], err_msg=key, **TOL)


def test_checkpoint_of_a_module_trained_on_ctx(ctx, tmp_path):
    mod, params = _train_steps(ctx, steps=2)
    prefix = str(tmp_path / "mlp")
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    # the saved parameters are the trained ones, as host arrays in MXNet's format
    saved = mx.nd.load("%s-0003.params" % prefix)
    for name, value in params.items():
        assert saved["arg:" + name].context == mx.cpu(0)
        np.testing.assert_array_equal(saved["arg:" + name].asnumpy(), value)
    # loaded on the CPU and on ctx, both predict what the trained module predicts
    x, _ = _data()
    want = mod.predict(mx.io.NDArrayIter(x, batch_size=BATCH)).asnumpy()
    for context in (mx.cpu(0), ctx):
        loaded = mx.mod.Module.load(prefix, 3, load_optimizer_states=True, context=context)
        loaded.bind(data_shapes=[("data", (BATCH, FEATURES))],
                    label_shapes=[("softmax_label", (BATCH,))])
        got = loaded.predict(mx.io.NDArrayIter(x, batch_size=BATCH)).asnumpy()
        np.testing.assert_allclose(got, want, **TOL)
    # training resumed from the checkpoint (momentum included) continues the original run
    x, y = _data()
    loaded.init_optimizer(optimizer="sgd", optimizer_params={
        "learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
    for i in range(2, 4):
        batch = mx.io.DataBatch([mx.nd.array(x[i * BATCH:(i + 1) * BATCH])],
                                [mx.nd.array(y[i * BATCH:(i + 1) * BATCH])])
        loaded.forward_backward(batch)
        loaded.update()
    _assert_params_close(_host(loaded.get_params()[0]), _cpu_reference(steps=4))


# ---------------------------------------------------------------- NDArray between devices

PAIRS = [
    pytest.param(mx.cpu(0), mx.cpu(1), id="cpu0-cpu1"),
    pytest.param(mx.cpu(0), mx.gpu(0), id="cpu-gpu0", marks=needs_gpu),
    pytest.param(mx.gpu(0), mx.cpu(0), id="gpu0-cpu", marks=needs_gpu),
    pytest.param(mx.gpu(0), mx.gpu(0), id="gpu0-gpu0", marks=needs_gpu),
    pytest.param(mx.gpu(0), mx.gpu(1), id="gpu0-gpu1", marks=needs_two_gpus),
    pytest.param(mx.gpu(1), mx.gpu(0), id="gpu1-gpu0", marks=needs_two_gpus),
]


@pytest.mark.parametrize("src_ctx,dst_ctx", PAIRS)
def test_ndarray_copies_between_devices(src_ctx, dst_ctx):
    host = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    src = mx.nd.array(host, ctx=src_ctx)
    # to a Context: a new array there, independent of the source
    moved = src.copyto(dst_ctx)
    assert moved.context == dst_ctx and moved.dtype == np.float32
    np.testing.assert_array_equal(moved.asnumpy(), host)
    src[:] = 0
    np.testing.assert_array_equal(moved.asnumpy(), host)
    # into an existing NDArray of another dtype: converted, written in place
    dst = mx.nd.zeros((3, 4), ctx=dst_ctx, dtype="float64")
    storage = dst._data
    assert moved.copyto(dst) is dst and dst._data is storage
    np.testing.assert_array_equal(dst.asnumpy(), host.astype(np.float64))
    # as_in_context: the same object when already there, else a copy
    assert moved.as_in_context(dst_ctx) is moved
    back = moved.as_in_context(src_ctx)
    assert back.context == src_ctx
    if src_ctx != dst_ctx:
        assert back is not moved
    np.testing.assert_array_equal(back.asnumpy(), host)
    # arithmetic on the destination stays there; mixing contexts is an error naming both
    assert (moved * 2).context == dst_ctx
    if src_ctx != dst_ctx:
        with pytest.raises(mx.MXNetError, match="different contexts"):
            moved + src
    mx.nd.waitall()


@pytest.mark.parametrize("ctx", ctx_params(gpu_ids=(0, 1)))
def test_wait_to_read_and_waitall_return_after_the_work(ctx):
    a = mx.nd.ones((64, 64), ctx=ctx)
    b = mx.nd.dot(a, a)
    b.wait_to_read()
    mx.nd.waitall()
    assert b.context == ctx
    np.testing.assert_array_equal(b.asnumpy(), np.full((64, 64), 64.0, np.float32))


@pytest.mark.parametrize("net", ["mlp", "lenet", "lstm_fused"])
@pytest.mark.parametrize("ctx", [p for p in ctx_params() if p.id != "cpu"])
def test_training_steps_read_nothing_back_to_the_host(ctx, net):
    """forward_backward + update on a GPU queue their work and never wait for it: no value
    comes back to the host inside a step (only asnumpy, metrics and printing wait). Counted
    by the stand-in CuPy (tests/fake_cupy.py), which records every host read."""
    from minimod import backend
    cupy = backend._cupy
    if not hasattr(cupy, "host_reads"):
        pytest.skip("host reads are counted by the stand-in CuPy only (tests/test_fake_gpu.py)")
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
    sys.path.insert(0, bench)
    try:
        import workloads
    finally:
        sys.path.remove(bench)
    mod, batches = workloads.make_module(mx, net, 8, context=ctx)
    for b in batches:
        b.data = [d.as_in_context(ctx) for d in b.data]
        b.label = [lab.as_in_context(ctx) for lab in b.label]
    step = workloads.module_step_fn(mod, batches)
    step()  # the first step may set things up
    cupy.reset_host_reads()
    for _ in range(3):
        step()
    assert cupy.host_reads() == []
    mod.get_outputs()[0].asnumpy()  # and the counter does see a read
    assert cupy.host_reads()
