"""The device-independent side of the GPU backend, checked on every machine: GPU contexts
without a usable GPU fail with a clear MXNetError, copies between arrays, the conftest
parametrisation."""
import numpy as np
import pytest

import minimod as mx
from minimod import backend

from .conftest import ctx_params, needs_gpu


def _missing_gpu():
    return mx.gpu(backend.gpu_count())  # one past the last GPU: absent on every machine


def test_gpu_context_is_cheap_and_importing_needs_no_cupy():
    ctx = mx.gpu(3)
    assert (ctx.device_type, ctx.device_id, str(ctx)) == ("gpu", 3, "gpu(3)")
    assert mx.num_gpus() == backend.gpu_count() >= 0
    assert isinstance(backend.cupy_status(), str) and backend.cupy_status()


@pytest.mark.parametrize("make", [
    lambda ctx: mx.nd.zeros((2, 3), ctx=ctx),
    lambda ctx: mx.nd.array([1.0, 2.0], ctx=ctx),
    lambda ctx: mx.nd.ones((2,)).as_in_context(ctx),
    lambda ctx: mx.nd.ones((2,)).copyto(ctx),
    lambda ctx: mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2).simple_bind(
        ctx, data=(1, 3)),
    lambda ctx: mx.nd.waitall() or mx.nd.zeros((1,), ctx=ctx).wait_to_read(),
], ids=["zeros", "array", "as_in_context", "copyto", "simple_bind", "wait_to_read"])
def test_using_a_missing_gpu_raises_mxnet_error(make):
    ctx = _missing_gpu()
    with pytest.raises(mx.MXNetError, match=r"gpu\(%d\)" % ctx.device_id) as info:
        make(ctx)
    assert "CuPy" in str(info.value) or "does not exist" in str(info.value)


def test_module_on_a_missing_gpu_raises_mxnet_error():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2),
                               name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(0), _missing_gpu()])
    with pytest.raises(mx.MXNetError, match="gpu"):
        mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4,))])


def test_copy_into_casts_and_broadcasts_on_the_host():
    dst = np.zeros((2, 3), np.float32)
    backend.copy_into(dst, np.arange(3, dtype=np.float64))
    np.testing.assert_array_equal(dst, [[0, 1, 2], [0, 1, 2]])
    assert dst.dtype == np.float32
    backend.copy_into(dst, 7)
    assert (dst == 7).all()


def test_to_context_copies_only_when_asked():
    a = np.ones(3, np.float32)
    assert backend.to_context(a, mx.cpu(0)) is a
    b = backend.to_context(a, mx.cpu(1), copy=True)
    assert b is not a and np.array_equal(a, b)


def test_copyto_between_cpu_devices_keeps_the_destination_storage():
    src = mx.nd.array([[1, 2], [3, 4]], ctx=mx.cpu(0))
    dst = mx.nd.zeros((2, 2), ctx=mx.cpu(1), dtype="float64")
    storage = dst._data
    assert src.copyto(dst) is dst and dst._data is storage
    np.testing.assert_array_equal(dst.asnumpy(), [[1, 2], [3, 4]])


def test_ctx_params_skip_gpus_exactly_when_absent():
    params = ctx_params(gpu_ids=(0, 1))
    assert [p.id for p in params] == ["cpu", "gpu0", "gpu1"]
    assert params[0].values == (mx.cpu(0),) and not params[0].marks
    for i, p in zip((0, 1), params[1:]):
        assert p.values == (mx.gpu(i),)
        (mark,) = p.marks
        assert mark.args[0] == (not backend.gpu_available(i))


def test_synchronize_is_immediate_on_cpu():
    backend.synchronize(mx.cpu(0))
    mx.nd.waitall()
    mx.nd.ones((2,)).wait_to_read()


@needs_gpu
def test_imperative_operators_run_on_the_inputs_gpu():
    """`mx.nd.<Operator>` allocates its outputs on the inputs' GPU and computes there what
    it computes on the host."""
    rng = np.random.RandomState(3)
    x = rng.uniform(-2, 2, (2, 3, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    host = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), None, (3, 3), num_filter=4,
                             no_bias=True)
    on_gpu = mx.nd.Convolution(mx.nd.array(x, ctx=mx.gpu(0)), mx.nd.array(w, ctx=mx.gpu(0)),
                               None, (3, 3), num_filter=4, no_bias=True)
    assert on_gpu.context == mx.gpu(0)
    assert backend.is_gpu_array(on_gpu._data)
    np.testing.assert_allclose(on_gpu.asnumpy(), host.asnumpy(), rtol=1e-5, atol=1e-5)
    parts = mx.nd.SliceChannel(mx.nd.Activation(on_gpu, "tanh"), 2)
    assert [p.context for p in parts] == [mx.gpu(0)] * 2
    np.testing.assert_allclose(parts[1].asnumpy(), np.tanh(host.asnumpy()[:, 2:]),
                               rtol=1e-5, atol=1e-6)


@needs_gpu
def test_custom_operator_on_a_gpu_gets_gpu_ndarrays():
    """A CustomOp sees its arrays on the executor's GPU, and results it makes on the host (the
    usual `mx.nd.array(numpy_result)`) are copied into them by assign."""
    seen = []

    class Square(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            seen.append(in_data[0].context)
            self.assign(out_data[0], req[0], mx.nd.array(in_data[0].asnumpy() ** 2))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * in_data[0] * 2)

    @mx.operator.register("gpu_square")
    class SquareProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Square()

    x = mx.sym.var("x")
    exe = mx.sym.Custom(x, op_type="gpu_square").simple_bind(mx.gpu(0), x=(2, 3))
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe.arg_dict["x"][:] = value
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.ones((2, 3), ctx=mx.gpu(0)))
    assert seen == [mx.gpu(0)]
    np.testing.assert_allclose(out.asnumpy(), value ** 2)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), 2 * value)
