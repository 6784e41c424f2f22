"""Model parallelism across device types: groups on a GPU and on the CPU in one executor (the
copy nodes move values between NumPy and CuPy arrays, forward and back), and under Module with
data parallelism on top. The results are the all-CPU run's within the float32 table of
conftest.py: the GPU nodes run the reference code where the CPU ones take the CPU fast paths.
On a machine without a GPU these run on the CuPy stand-in (tests/test_fake_gpu.py)."""
import numpy as np
import pytest

import minimod as mx
from minimod import backend

from ..conftest import GPU_TOLERANCES, needs_gpu, needs_two_gpus
from .test_group2ctx import two_group_mlp

pytestmark = needs_gpu
TOL = dict(rtol=GPU_TOLERANCES["op_vs_float64_cpu"], atol=GPU_TOLERANCES["op_vs_float64_cpu"])
MODULE_TOL = dict(rtol=GPU_TOLERANCES["module_params_vs_cpu"],
                  atol=GPU_TOLERANCES["module_params_vs_cpu"])

PLACEMENTS = [
    pytest.param(mx.cpu(0), {"dev1": mx.gpu(0), "dev2": mx.cpu(0)}, id="cpu-default-gpu-group"),
    pytest.param(mx.gpu(0), {"dev1": mx.cpu(0), "dev2": mx.gpu(0)}, id="gpu-default-cpu-group"),
    pytest.param(mx.cpu(0), {"dev1": mx.gpu(1), "dev2": mx.gpu(0)}, id="two-gpus",
                 marks=needs_two_gpus),
]


def _fill(exe, seed=0):
    rng = np.random.RandomState(seed)
    for name, arr in sorted(exe.arg_dict.items()):
        value = (rng.randint(0, 3, arr.shape) if name == "softmax_label"
                 else rng.uniform(-1, 1, arr.shape))
        arr[:] = mx.nd.array(value.astype(np.float32))


@pytest.mark.parametrize("ctx, group2ctx", PLACEMENTS)
def test_mixed_devices_agree_with_the_cpu_run(ctx, group2ctx):
    sym = two_group_mlp()
    exe = sym.simple_bind(ctx, data=(5, 7), group2ctx=group2ctx)
    ref = sym.simple_bind(mx.cpu(0), data=(5, 7))
    for e in (exe, ref):
        _fill(e)
        for _ in range(2):  # twice: BatchNorm's moving statistics move in between
            e.forward(is_train=True)
            e.backward()
    fc1 = exe.arg_dict["fc1_weight"]
    assert fc1.context == group2ctx["dev1"]
    assert backend.is_gpu_array(fc1._data) == (group2ctx["dev1"].device_type == "gpu")
    assert backend.is_gpu_array(exe.grad_dict["fc2_weight"]._data) == (
        group2ctx["dev2"].device_type == "gpu")
    assert exe.aux_dict["bn1_moving_var"].context == group2ctx["dev1"]
    out = exe.outputs[0]
    assert out.context == group2ctx["dev2"]
    assert backend.is_gpu_array(out._data) == (group2ctx["dev2"].device_type == "gpu")
    np.testing.assert_allclose(out.asnumpy(), ref.outputs[0].asnumpy(), **TOL)
    for name in ref.grad_dict:
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(),
                                   ref.grad_dict[name].asnumpy(), err_msg=name, **TOL)
    for name in ref.aux_dict:
        np.testing.assert_allclose(exe.aux_dict[name].asnumpy(), ref.aux_dict[name].asnumpy(),
                                   err_msg=name, **TOL)
    # the CPU-only rewrites are left out of a plan mixing CPUs and GPUs
    assert "batch_last" not in exe.debug_str().splitlines()[1]


def _train(context, group2ctxs, steps=3):
    sym = two_group_mlp()
    mod = mx.mod.Module(sym, context=context, group2ctxs=group2ctxs)
    mod.bind(data_shapes=[("data", (8, 7))], label_shapes=[("softmax_label", (8,))])
    rng = np.random.RandomState(1)
    shapes, _, _ = sym.infer_shape(data=(8, 7))
    args = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s))
            for n, s in zip(sym.list_arguments(), shapes) if n not in ("data", "softmax_label")}
    mod.init_params(arg_params=args)
    mod.init_optimizer(kvstore="device", optimizer="sgd",
                       optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    x = rng.uniform(-1, 1, (8, 7)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    for _ in range(steps):
        mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
        mod.backward()
        mod.update()
    return mod, {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize("group2ctxs", [
    pytest.param({"dev1": mx.gpu(0), "dev2": mx.cpu(1)}, id="one-device"),
    pytest.param({"dev1": [mx.gpu(0), mx.gpu(1)], "dev2": mx.cpu(2)}, id="two-devices",
                 marks=needs_two_gpus),
])
def test_module_with_groups_on_gpu_and_cpu_trains_as_on_the_cpu(group2ctxs):
    context = [mx.cpu(0), mx.cpu(1)] if isinstance(group2ctxs["dev1"], list) else mx.cpu(0)
    mod, got = _train(context, group2ctxs)
    _, want = _train(context, None)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], err_msg=name, **MODULE_TOL)
    exe = mod._exec_group.execs[0]
    assert backend.is_gpu_array(exe.arg_dict["fc1_weight"]._data)
    assert not backend.is_gpu_array(exe.arg_dict["fc2_weight"]._data)
