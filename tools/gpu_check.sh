#!/usr/bin/env bash
# The device check, as one prepared script (run from the repository root on a GPU machine):
# what the backend finds, the whole suite with its GPU cases, then bench_gpu.py's table.
# Logs go to $OUT (or ./gpu_check_out). Budgeted to end in about 6 minutes.
set -u
out=${OUT:-gpu_check_out}; mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 HYPOTHESIS_PROFILE=ci
python=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 | tee "$out/gpu.txt"
$python - <<'PY' 2>&1 | tee -a "$out/gpu.txt"
import numpy, minimod as mx
from minimod import backend
print("numpy", numpy.__version__, "|", backend.cupy_status(), "|", backend.cudnn_status())
print(mx.runtime.Features())
PY
# the suite, GPU cases included; xdist spreads it over the machine's cores
workers=${WORKERS:-8}; xdist=""; [ "$workers" != 0 ] && xdist="-n $workers"
timeout "${SUITE_S:-240}" $python -m pytest -q -m "not slow" -p no:cacheprovider $xdist \
  2>&1 | tee "$out/suite.log" | tail -25
echo "suite exit: ${PIPESTATUS[0]}"
# the benchmark (minimod, PyTorch eager, PyTorch with CUDA graphs), short windows
timeout "${BENCH_S:-150}" $python benchmarks/bench_gpu.py --nets "${NETS:-mlp,lenet,lstm,lstm_fused}" \
  --warmup 1 --max-s 6 --quiet-windows 5 2>&1 | tee "$out/bench.log" | tail -20
echo "bench exit: ${PIPESTATUS[0]}"
