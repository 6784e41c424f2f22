"""The GPU test cases on a strict NumPy stand-in for CuPy (tests/fake_cupy.py) with two
pretend GPUs, so that every CPU-only run (CI included) exercises the GPU code paths: device
scopes, host/device and peer copies, the executor group's slicing, the kvstores' device
reductions, the cuDNN variants (through CuPy's wrapper, and through nvidia-cudnn-frontend with
MINIMOD_FAKE_CUDNN=frontend) and the fused kernels. The stand-in refuses what CuPy refuses
(host arrays in device operations, arrays of another GPU than the current one), so a device
path that would move data wrongly fails here. It is no substitute for a real GPU: asynchrony,
memory pools, NCCL and CuPy's exact API are not modelled.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from . import fake_cupy

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_TEST_FILES = ["tests/test_gpu_backend.py", "tests/ops/test_gpu_ops.py",
                  "tests/kernels/test_cudnn_variants.py", "tests/ops/test_fused_kernels.py",
                  "tests/ops/test_more_ops.py", "tests/ops/test_random_ops.py",
                  "tests/executor/test_gpu.py", "tests/kvstore/test_gpu_kvstore.py",
                  "tests/module/test_gpu_module.py", "tests/executor/test_group2ctx_gpu.py",
                  "tests/executor/test_cuda_graphs.py", "tests/module/test_update_graphs.py",
                  "tests/executor/test_graph_random.py", "tests/executor/test_graph_coverage.py",
                  "tests/passes/test_fuse_cells.py", "tests/kernels/test_softmax_rows.py",
                  "tests/kernels/test_joins.py", "tests/passes/test_stack_steps.py",
                  "tests/passes/test_stack_grads.py", "tests/passes/test_fuse_grads.py",
                  "tests/passes/test_reader_bias.py", "tests/kernels/test_pool_max.py",
                  "tests/kernels/test_pool_overlap.py", "tests/kernels/test_embedding_kernels.py",
                  "tests/kernels/test_batchnorm_gpu.py", "tests/kernels/test_take_rows.py",
                  "tests/ops/test_nn.py", "tests/ops/test_cast_into.py"]


def _run_on_stand_in(files, **env_extra) -> str:
    env = dict(os.environ, MINIMOD_FAKE_CUPY="1", **env_extra)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           *files], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    passed = int(re.search(r"(\d+) passed", proc.stdout).group(1))
    assert passed >= 500, tail
    # nothing skipped for want of a GPU: the pretend GPUs stood in for every case
    assert "no usable GPU" not in proc.stdout and "needs two GPUs" not in proc.stdout, tail
    return proc.stdout


def test_gpu_cases_pass_on_the_strict_stand_in():
    """With the stand-in's cuDNN: convolution and pooling take the cuDNN variants."""
    _run_on_stand_in(GPU_TEST_FILES)


def test_gpu_cases_pass_on_the_im2col_path_too():
    """MINIMOD_CUDNN=0 (or a CuPy without cuDNN, such as CuPy 14): convolution and pooling
    run their im2col code on the device arrays."""
    _run_on_stand_in(["tests/ops/test_gpu_ops.py", "tests/executor/test_gpu.py",
                      "tests/module/test_gpu_module.py"], MINIMOD_CUDNN="0")


def test_gpu_cases_pass_on_the_cudnn_frontend_path():
    """MINIMOD_FAKE_CUDNN=frontend: a CuPy without its cuDNN wrapper (as CuPy 14) beside the
    stand-in for nvidia-cudnn-frontend (tests/ops/fake_cudnn_frontend.py): convolutions take
    the cuDNN variants through `FrontendOps`, pooling its own path."""
    env = dict(os.environ, MINIMOD_FAKE_CUPY="1", MINIMOD_FAKE_CUDNN="frontend")
    probe = ("from tests import fake_cupy; fake_cupy.install()\n"
             "from minimod import backend, gpu\n"
             "from minimod.kernels.cudnn import cudnn_for\n"
             "print(backend.cudnn_status()); print(type(cudnn_for(gpu(0))).__name__)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    status, ops = proc.stdout.split("\n")[:2]
    assert re.fullmatch(r"cuDNN \S+ through nvidia-cudnn-frontend \S+", status), status
    assert ops == "FrontendOps"
    _run_on_stand_in(GPU_TEST_FILES, MINIMOD_FAKE_CUDNN="frontend")


def test_stand_in_refuses_what_cupy_refuses():
    cp = fake_cupy._build()
    with cp.cuda.Device(0):
        a = cp.zeros((2, 3), dtype=np.float32)
        with pytest.raises(TypeError, match="host NumPy array"):
            a + np.ones((2, 3), np.float32)
        with pytest.raises(TypeError, match="host NumPy array"):
            a[...] = np.ones((2, 3), np.float32)
        a[...] = cp.asarray(np.ones((2, 3), np.float32))  # an explicit transfer is fine
        assert a.get().sum() == 6 and a.device.id == 0
    with cp.cuda.Device(1):
        with pytest.raises(ValueError, match="gpu\\(0\\) while gpu\\(1\\)"):
            a * 2
        b = a.copy()  # a peer copy lands on the current device
        assert b.device.id == 1 and (b.get() == 1).all()
