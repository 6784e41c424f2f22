"""mx.rtc: a CUDA kernel written by the user compiles (NVRTC here, where installed), and
launches on GPU NDArrays with MXNet's argument rules; on the CuPy stand-in the launch runs the
kernel's NumPy twin, on a real GPU the kernel itself."""
import numpy as np
import pytest

import minimod as mx
from minimod import rtc

from .fake_cuda_graphs import USER_KERNELS
from .ops.test_fused_kernels import _compile, _nvrtc

SOURCE = r"""
extern "C" __global__ void axpy(const float *x, float *y, float alpha, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) y[i] += alpha * x[i];
}
template <typename T> __global__ void scale(T *y, T factor, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) y[i] *= factor;
}
"""


def _axpy(grid, block, shared_mem, x, y, alpha, n):
    threads = grid[0] * block[0]
    count = min(int(n), threads)
    y.reshape(-1)[:count] += np.float32(alpha) * x.reshape(-1)[:count]


def _scale(grid, block, shared_mem, y, factor, n):
    y.reshape(-1)[:min(int(n), grid[0] * block[0])] *= factor


USER_KERNELS[SOURCE] = {"axpy": _axpy, "scale<double>": _scale}


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_the_example_source_compiles_with_nvrtc():
    status, log = _compile(_nvrtc(), SOURCE.replace("template <typename T>", "template <class T>")
                           + "template __global__ void scale<double>(double*, double, int);",
                           "rtc_example.cu")
    assert status == 0, log


def test_signatures_are_read_as_mxnet_reads_them():
    assert rtc.parse_signature("const float *x, float* y, float alpha, int64_t n") == [
        (True, np.dtype(np.float32)), (True, np.dtype(np.float32)),
        (False, np.dtype(np.float32)), (False, np.dtype(np.int64))]
    assert rtc.parse_signature("__half *h, char c, uint8_t *u") == [
        (True, np.dtype(np.float16)), (False, np.dtype(np.int8)), (True, np.dtype(np.uint8))]
    with pytest.raises(mx.MXNetError, match="has type 'long'"):
        rtc.parse_signature("long *x")
    with pytest.raises(mx.MXNetError, match="cannot read the parameter"):
        rtc.parse_signature("float **x")


def test_without_a_gpu_the_module_says_why():
    if mx.context.num_gpus():
        pytest.skip("a GPU (or the stand-in) is there")
    with pytest.raises(mx.MXNetError, match="needs a GPU"):
        rtc.CudaModule(SOURCE)


def test_launch_on_the_gpu(ctx):
    if ctx.device_type != "gpu":
        pytest.skip("CUDA kernels run on GPU contexts")
    module = mx.rtc.CudaModule(SOURCE, exports=["scale<double>"])
    axpy = module.get_kernel("axpy", "const float *x, float *y, float alpha, int n")
    x = mx.nd.array(np.arange(10), ctx=ctx)
    y = mx.nd.ones((10,), ctx=ctx)
    axpy.launch([x, y, 3.0, 10], ctx, (2, 1, 1), (8, 1, 1))
    np.testing.assert_allclose(y.asnumpy(), 1 + 3 * np.arange(10))
    scale = module.get_kernel("scale<double>", "double *y, double factor, int n")
    z = mx.nd.ones((5,), ctx=ctx, dtype="float64")
    scale.launch([z, 2.5, 5], ctx, (1, 1, 1), (32, 1, 1))
    np.testing.assert_allclose(z.asnumpy(), 2.5)
    with pytest.raises(mx.MXNetError, match="expects 4 arguments but got 3"):
        axpy.launch([x, y, 3.0], ctx, (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="argument 1 must be a float32 array"):
        axpy.launch([x, z, 3.0, 5], ctx, (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="argument 0 is a pointer and needs an NDArray"):
        axpy.launch([1.0, y, 3.0, 10], ctx, (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="argument 2 is a float32 value"):
        axpy.launch([x, y, x, 10], ctx, (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="only be launched on a GPU context"):
        axpy.launch([x, y, 3.0, 10], mx.cpu(), (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="grid_dims must be 3 integers"):
        axpy.launch([x, y, 3.0, 10], ctx, (1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="no kernel 'missing'"):
        module.get_kernel("missing", "float *y").launch([y], ctx, (1, 1, 1), (1, 1, 1))
