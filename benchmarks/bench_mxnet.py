"""MXNet 1.9.1 through the Module API (run with /tmp/mxenv/bin/python):
`/tmp/mxenv/bin/python bench_mxnet.py --net lstm --batch 32`. Prints one JSON line.

The same workload text as bench_minimod.py (workloads.py), with `import mxnet as mx`.
"""
import benchutil  # noqa: F401  (pins the thread pools before numpy/mxnet are imported)
import mxnet as mx
import workloads

if __name__ == "__main__":
    workloads.main(mx, "mxnet")
