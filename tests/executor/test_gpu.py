"""Executors over backends: the shared MLP, LeNet and LSTM graphs bound on `ctx` (cpu(0), and
gpu(0) where present) give a float64 CPU run's outputs and gradients within the float32 table
of conftest.py; executor inputs copied in from the host or from another device land on the
executor's device."""
import numpy as np
import pytest

import minimod as mx
from minimod import backend
from minimod.test_utils import check_consistency

from ..conftest import GPU_TOLERANCES, ctx_params, needs_gpu
from ..passes.graphs import GRAPHS


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_graph_on_ctx_matches_float64_cpu(name, ctx):
    sym, shapes = GRAPHS[name]()
    # the hand-unrolled LSTM starts from float32 zeros states: its reference stays float32
    f64 = {} if name == "lstm" else {
        n: np.float64 for n in sym.list_arguments() + sym.list_auxiliary_states()}
    tol = GPU_TOLERANCES["op_vs_float64_cpu"]
    tols = {np.dtype(np.float64): 0.0, np.dtype(np.float32): tol}
    truth = check_consistency(
        sym, [dict(ctx=mx.cpu(0), type_dict=f64, **shapes), dict(ctx=ctx, **shapes)],
        scale=0.5, rtol=tols, atol=tols)
    assert all(np.isfinite(v.asnumpy()).all() for v in truth.values() if v is not None)


@pytest.mark.parametrize("src", ctx_params(gpu_ids=(0, 1)))
def test_executor_inputs_from_any_device_land_on_its_own(ctx, src):
    """forward(data=...) and backward(out_grads) accept arrays of any context (copied over),
    and the results stay on the executor's device until asnumpy."""
    sym, shapes = GRAPHS["mlp"]()
    exe = sym.simple_bind(ctx, **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = mx.nd.array(rng.uniform(-0.5, 0.5, arr.shape), ctx=src)
    data = rng.uniform(-1, 1, shapes["data"]).astype(np.float32)
    out = exe.forward(is_train=True, data=mx.nd.array(data, ctx=src))[0]
    assert out.context == ctx and backend.is_gpu_array(out._data) == (ctx.device_type == "gpu")
    exe.backward()
    ref = sym.simple_bind(mx.cpu(0), **shapes)
    for name in ref.arg_dict:
        ref.arg_dict[name][:] = exe.arg_dict[name].asnumpy()
    want = ref.forward(is_train=True)[0].asnumpy()
    ref.backward()
    tol = GPU_TOLERANCES["op_vs_float64_cpu"]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=tol, atol=tol)
    for name, grad in exe.grad_dict.items():
        assert grad.context == ctx
        np.testing.assert_allclose(grad.asnumpy(), ref.grad_dict[name].asnumpy(), rtol=tol,
                                   atol=tol, err_msg=name)


@needs_gpu
def test_bind_refuses_arrays_of_another_device_without_group2ctx():
    """As MXNet 1.9.1: binding on cpu(0) with an argument on gpu(0) (an array made while the
    default context was the GPU) is refused at bind, naming the argument and both contexts,
    instead of failing later inside an op; an aux state on the GPU is refused too."""
    x = mx.sym.Variable("x")
    with pytest.raises(mx.base.BindError, match="argument 'x' is on gpu\\(0\\) but the "
                                                "executor binds on cpu\\(0\\)"):
        (x * 2).bind(mx.cpu(0), {"x": mx.nd.ones((2,), ctx=mx.gpu(0))})
    bn = mx.sym.BatchNorm(mx.sym.Variable("a"), name="bn")
    with pytest.raises(mx.base.BindError, match="aux state 'bn_moving_mean' is on gpu\\(0\\)"):
        bn.bind(mx.cpu(0), {"a": mx.nd.ones((2, 3)), "bn_gamma": mx.nd.ones((3,)),
                            "bn_beta": mx.nd.ones((3,))},
                aux_states={"bn_moving_mean": mx.nd.zeros((3,), ctx=mx.gpu(0)),
                            "bn_moving_var": mx.nd.ones((3,))})
