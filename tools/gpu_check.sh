#!/usr/bin/env bash
# The device check, as one prepared script (run from the repository root on a GPU machine):
# what the backend finds, bench_gpu.py's table, then the whole suite with its GPU cases.
# Logs go to $OUT (or ./gpu_check_out). Budgeted to end in about 8 minutes. With KIT=<a copy of
# ../shared/mxnet-tests inside the checkout>, MXNet's kit runs on gpu(0) beside the suite.
# PROBE_S=0 or BENCH_S=0 leaves that part out; SUITE_S=0 the suite; SUITE_S, KIT_S, KIT_SHARDS,
# PER_TEST_S (the kit's limit per test, its own default 120 s: kernels compile on first use),
# WORKERS, NETS and TESTS (the suite's paths or node ids) set the rest.
set -u
out=${OUT:-gpu_check_out}; mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 HYPOTHESIS_PROFILE=ci
python=${PYTHON:-python3}
# wheels carried in .whl/ (the cuDNN frontend, pynose for the kit, opencv-python-headless for the
# image tests; onnx/onnxruntime may be left out: tests/onnx then skips) go into the interpreter
if ls .whl/*.whl >/dev/null 2>&1; then
  $python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
fi
# a cuDNN frontend that cannot even be imported (or kills its interpreter) is taken out again,
# so that the rest runs, on the im2col path
if $python -c "import cudnn" >/dev/null 2>&1 || ! $python -m pip show -q nvidia-cudnn-frontend \
    >/dev/null 2>&1; then :; else
  echo "cuDNN frontend does not import here:"; $python -c "import cudnn" 2>&1 | tail -2
  $python -m pip uninstall -y -q nvidia-cudnn-frontend
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.txt"
$python - <<'PY' 2>&1 | tee -a "$out/gpu.txt"
import numpy, minimod as mx
from minimod import backend
print("numpy", numpy.__version__, "|", backend.cupy_status(), "|", backend.cudnn_status())
print(mx.runtime.Features())
PY
# a first look at the new GPU paths: a few training steps per net, then how each ran (CUDA
# graphs or why not, for the steps and the optimizer's update; cuBLAS direct or not; which
# cuDNN binding) and whether graphs on/off agree
[ "${PROBE_S:-60}" != 0 ] && timeout "${PROBE_S:-60}" $python - <<'PY' 2>&1 | tee "$out/probe.txt"
import os, sys, traceback
import numpy as np
sys.path.insert(0, "benchmarks")
import minimod as mx, workloads as wl
from minimod import backend, gemm
from minimod.flat import update_graph_status
for net in ("mlp", "lenet", "lstm"):
    params = {}
    for graphs in ("0", "1"):
        os.environ["MINIMOD_CUDA_GRAPHS"] = graphs
        try:
            mod, batches = wl.make_module(mx, net, 8, context=mx.gpu(0))
            for b in batches[:4]:
                mod.forward_backward(b); mod.update()
            params[graphs] = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
            inner = getattr(mod, "_curr_module", mod)
            exe = inner._exec_group.execs[0]
            print(net, "graphs=%s" % graphs, exe.graph_status(),
                  "update:", sorted(set(update_graph_status(inner._updater).values())))
            ops = [n.op.name for n in exe._plan.graph.nodes if n.op is not None]
            print(net, "plan: %d steps, %d idle;" % (len(ops), len(exe._plan.memory.idle_nodes)),
                  "rewrites:", dict(exe._plan.rewrites))
        except Exception:
            print(net, "graphs=%s FAILED" % graphs); traceback.print_exc()
    if len(params) == 2:
        diff = max(float(np.max(np.abs(params["0"][k] - params["1"][k]))) for k in params["0"])
        print(net, "max |graphs on - off| over the parameters:", diff)
print("gemm:", gemm.blas_status()); print("cudnn:", backend.cudnn_status())
from minimod.kernels import batchnorm_gpu, embedding, pool_gpu, softmax_rows; print("softmax rows:", softmax_rows.status()); print("pooling:", pool_gpu.status()); print("embedding:", embedding.status()); print("batchnorm:", batchnorm_gpu.status())
PY
# the benchmark (minimod with and without CUDA graphs, PyTorch eager and with CUDA graphs),
# short windows; the table says which of minimod's steps replayed as graphs, and why not
[ "${BENCH_S:-210}" != 0 ] && timeout "${BENCH_S:-210}" $python benchmarks/bench_gpu.py --nets "${NETS:-mlp,lenet,lstm,lstm_fused}" \
  --warmup 1 --max-s 6 --quiet-windows 5 2>&1 | tee "$out/bench.log" | tail -20
bench_rc=${PIPESTATUS[0]}; [ "${BENCH_S:-210}" != 0 ] && echo "bench exit: $bench_rc"
# MXNet's conformance kit on gpu(0) (test_operator.py), beside the suite, when a copy of the
# kit was carried in as $KIT (tools/conformance.py --context gpu)
kit_pid=""
if [ -n "${KIT:-}" ] && [ -d "$KIT" ]; then
  FILE_TIMEOUT_S=${KIT_S:-150} PER_TEST_S=${PER_TEST_S:-120} timeout $(( ${KIT_S:-150} + 40 )) \
    $python tools/conformance.py --kit "$KIT" --python "$python" --context gpu \
    --shards "${KIT_SHARDS:-4}" \
    --report "$out/conformance-gpu.md" > "$out/kit.log" 2>&1 &
  kit_pid=$!
fi
# the suite, GPU cases included; xdist spreads it over the machine's cores
workers=${WORKERS:-8}; xdist=""; [ "$workers" != 0 ] && xdist="-n $workers"
if [ "${SUITE_S:-170}" != 0 ]; then
  # shellcheck disable=SC2086  # TESTS is a list of paths or node ids
  MINIMOD_FAILURE_LOG="$out/failures.txt" timeout "${SUITE_S:-170}" $python -m pytest -q \
    -m "not slow" -p no:cacheprovider $xdist ${TESTS:-} 2>&1 | tee "$out/suite.log" | tail -25
  echo "suite exit: ${PIPESTATUS[0]}"
fi
if [ -n "$kit_pid" ]; then
  wait "$kit_pid"; echo "kit exit: $?"; grep -m3 "pass\|gpu(0)" "$out/conformance-gpu.md" 2>/dev/null
fi
