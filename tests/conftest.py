"""Test-wide settings: hypothesis profiles, BLAS kept to one thread per process, and the
backend parametrisation of the GPU tests.

`ctx_params()` is cpu(0) always and gpu(0) marked skip unless the backend reports a usable GPU
(CuPy installed and a device visible), so a CPU-only machine runs every CPU case and reports
the GPU ones as skipped with the reason. The `ctx` fixture is that parametrisation. A hook
below logs failures as they happen where MINIMOD_FAILURE_LOG asks for it.
"""
import os

if os.environ.get("MINIMOD_FAKE_CUPY") == "1":  # before minimod loads: see tests/fake_cupy.py
    from tests import fake_cupy
    fake_cupy.install()

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=15, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("fuzz", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import pytest  # noqa: E402

from minimod import backend  # noqa: E402
from minimod.context import cpu, gpu  # noqa: E402

_WHY_NO_GPU = "no usable GPU: %s" % backend.cupy_status()
#: skips a test unless gpu(0) can hold arrays
needs_gpu = pytest.mark.skipif(not backend.gpu_available(0), reason=_WHY_NO_GPU)
#: skips a test unless gpu(0) and gpu(1) both can
needs_two_gpus = pytest.mark.skipif(not backend.gpu_available(1),
                                    reason="needs two GPUs (%s)" % backend.cupy_status())


def ctx_params(gpu_ids=(0,)) -> list:
    """pytest params: cpu(0), then gpu(i) for each id, each GPU one skipped where absent."""
    params = [pytest.param(cpu(0), id="cpu")]
    for i in gpu_ids:
        mark = pytest.mark.skipif(not backend.gpu_available(i), reason=_WHY_NO_GPU)
        params.append(pytest.param(gpu(i), id="gpu%d" % i, marks=mark))
    return params


@pytest.fixture(params=ctx_params())
def ctx(request):
    """The device a backend-parametrised test runs on: cpu(0), and gpu(0) where present."""
    return request.param


#: float32 tolerances of the backend-parametrised tests (rtol = atol), also in docs/gpu.md's
#: section: a float32 run on the tested device against a float64 run on the CPU (ops: outputs
#: and gradients), a float32 Module trained on the device against the same on the CPU
#: (parameters after a few SGD steps), and kvstore sums (NCCL adds in its own order).
GPU_TOLERANCES = {
    "op_vs_float64_cpu": 1e-3,
    "module_params_vs_cpu": 1e-4,
    "kvstore_sum": 1e-6,
}


def pytest_runtest_logreport(report):
    """With MINIMOD_FAILURE_LOG naming a file (tools/gpu_check.sh sets it), each failure is
    appended there as it happens, id and traceback, so that a run cut off by its time limit
    (a GPU session's, say) still tells which tests failed and why. Under xdist the controller
    writes it, the workers don't."""
    path = os.environ.get("MINIMOD_FAILURE_LOG")
    if not path or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "a") as f:
        f.write("FAILED %s (%s)\n%s\n\n"
                % (report.nodeid, report.when, report.longreprtext[-4000:]))
