"""benchmarks/bench_gpu.py without a GPU: one line and exit code 2, torch never imported; its
table and RESULTS.md append on made-up records (no benchmark runs here)."""
import importlib.util
import os
import subprocess
import sys
from unittest import mock

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "benchmarks")
SCRIPT = os.path.join(BENCH, "bench_gpu.py")

_PROBE = """
import runpy, sys
sys.argv = [{script!r}]
sys.path.insert(0, {bench!r})
try:
    runpy.run_path({script!r}, run_name="__main__")
    code = 0
except SystemExit as exit:
    code = exit.code
print("torch imported:", "torch" in sys.modules)
sys.exit(code)
"""


def test_without_a_gpu_it_says_so_in_one_line_and_exits_2():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no GPU, even on a GPU machine
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(script=SCRIPT, bench=BENCH)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("bench_gpu:")]
    assert len(lines) == 1 and "no usable GPU" in lines[0], proc.stderr
    assert proc.stdout.strip() == "torch imported: False"


@pytest.fixture
def bench_gpu(monkeypatch):
    monkeypatch.syspath_prepend(BENCH)
    with mock.patch.dict(os.environ):  # benchutil pins thread variables on import
        spec = importlib.util.spec_from_file_location("bench_gpu_under_test", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _record(lib, net, sps, **extra):
    return dict(lib=lib + "-gpu", net=net, batch=128, samples_per_s=sps,
                ms_per_step=128e3 / sps, version="1.0", device="Test GPU 80GB", **extra)


def test_table_names_the_device_and_says_why_a_row_did_not_run(bench_gpu, tmp_path):
    records = [_record("minimod", "mlp", 2000.0, cupy="13.0", convolution="cuDNN via CuPy's "
                       "wrapper"), _record("torch", "mlp", 4000.0),
               _record("minimod", "lenet", 500.0, noisy=True),
               {"lib": "torch-gpu", "net": "lenet", "error": "PyTorch is not installed"}]
    text = bench_gpu.table(records)
    assert "GPU: Test GPU 80GB" in text and "cupy 13.0" in text
    assert text.endswith("minimod's convolution and pooling: cuDNN via CuPy's wrapper")
    rows = {ln.split("|")[1].strip(): ln for ln in text.splitlines() if ln.startswith("| ")}
    assert "0.50" in rows["mlp"] and "2000.0" in rows["mlp"] and "4000.0" in rows["mlp"]
    assert "not run: PyTorch is not installed" in rows["lenet"]
    assert "(noisy)" in rows["lenet"] and rows["lenet"].rstrip().endswith("| - |")
    results = tmp_path / "RESULTS.md"
    results.write_text("# Results\n\nCPU tables\n")
    bench_gpu.append_results(str(results), text)
    bench_gpu.append_results(str(results), text)
    written = results.read_text()
    assert written.startswith("# Results\n\nCPU tables\n")
    assert written.count("## GPU: minimod (CuPy) vs PyTorch CUDA") == 2
    assert written.count(text) == 2


def test_table_has_the_cuda_graph_anchor_and_kernel_times(bench_gpu):
    records = [_record("minimod", "lstm", 1000.0, kernel_ms_per_step=20.0,
                       graphs="forward: graph; backward: graph", gemm="cuBLAS direct (x)"),
               _record("minimod-eager", "lstm", 400.0, kernel_ms_per_step=20.5),
               _record("torch", "lstm", 500.0, kernel_ms_per_step=25.0),
               _record("torch-graph", "lstm", 2000.0, kernel_ms_per_step=24.0)]
    text = bench_gpu.table(records)
    row = next(ln for ln in text.splitlines() if ln.startswith("| lstm"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[5] == "2.00" and cells[7] == "0.50"  # vs eager, vs the captured graph
    assert "kernels 20.00 ms" in cells[2] and "kernels 24.00 ms" in cells[6]
    assert cells[3].startswith("400.0")  # minimod without graphs beside it
    assert "summed kernel time per step" in text
    assert "minimod's CUDA graphs: lstm: forward: graph; backward: graph" in text
    assert "minimod's matrix products: cuBLAS direct (x)" in text


def test_kernel_counts_table_on_the_stand_in():
    """benchmarks/kernel_counts.py counts a step's captured kernels on the CuPy stand-in,
    with and without the fusion pass (the LSTM cells fuse; in an MLP the activations add
    their layers' biases, two kernels fewer)."""
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "kernel_counts.py"),
                           "--nets", "mlp"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = [line for line in proc.stdout.splitlines() if line.startswith("| mlp |")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "128" and int(cells[2]) == int(cells[4]) - 2 > 10
    assert cells[3].startswith("train ") and "update " in cells[3]


def test_kernel_counts_by_op_on_the_stand_in():
    """`--by-op` puts each kernel of a captured step down to the op whose step made it."""
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "kernel_counts.py"),
                           "--nets", "mlp", "--by-op"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    total = int(lines[0].split(": ")[1].split()[0])
    rows = {name: int(count) for count, name in (line.split(None, 1) for line in lines[1:])}
    assert sum(rows.values()) == total > 10
    # three layers: a GEMM each forward, and the last one's bias (the first two's are added
    # by the activations reading them, in their one kernel); the update is one kernel
    assert rows["FullyConnected(bias in reader)"] == 2 and rows["FullyConnected"] == 2
    assert rows["Activation(bias)"] == 2 and rows["update"] == 1
    assert rows["_backward_FullyConnected"] + rows[
        "_backward_FullyConnected(bias in reader)"] >= 6


def test_kernel_counts_of_a_sequential_module_net():
    """The residual network of workloads_more.py is a SequentialModule of Modules and
    residual modules: every inner Module's captured steps count, and each of its 13
    BatchNorm layers is one kernel forward and one backward (kernels/batchnorm_gpu.py)."""
    proc = subprocess.run([sys.executable, os.path.join(BENCH, "kernel_counts.py"),
                           "--nets", "sdnet", "--by-op"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {name: int(count) for count, name in (line.split(None, 1)
                                                 for line in proc.stdout.splitlines()[1:])}
    assert rows["BatchNorm"] == rows["_backward_BatchNorm"] == 13
    assert rows["Convolution"] >= 13 and rows["update"] >= 8
