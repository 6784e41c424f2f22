"""dist_sync over MPI: two worker processes, each on half of every batch, end with the
parameters of one process training on whole batches (needs the `dist` extra)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import minimod as mx

mpi4py = pytest.importorskip("mpi4py", reason="the dist extra (mpi4py) is not installed")
HERE = os.path.dirname(os.path.abspath(__file__))


def _mpiexec():
    for candidate in (os.path.join(os.path.dirname(sys.executable), "mpiexec"),
                      shutil.which("mpiexec")):
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.skip("no mpiexec next to the interpreter or on PATH")


def _single_process(prefix):
    """The same training as dist_worker.py, in this process, on whole batches."""
    subprocess.run([sys.executable, os.path.join(HERE, "dist_worker.py"), prefix, "local"],
                   check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return np.load(prefix + "-rank0.npz")


@pytest.mark.parametrize("kvstore", ["dist_sync", "dist_device_sync"])
def test_two_workers_match_one_process(tmp_path, kvstore):
    prefix = str(tmp_path / "dist")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([_mpiexec(), "-n", "2", sys.executable, os.path.join(HERE, "dist_worker.py"),
                    prefix, kvstore], check=True, env=env, timeout=120)
    ranks = [np.load("%s-rank%d.npz" % (prefix, r)) for r in range(2)]
    assert int(ranks[0]["workers"]) == 2
    one = _single_process(str(tmp_path / "one"))
    for name in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
        np.testing.assert_array_equal(ranks[0][name], ranks[1][name])  # replicas agree
        np.testing.assert_allclose(ranks[0][name], one[name], rtol=1e-5, atol=1e-6)
    assert os.path.exists(prefix + ".states")


def test_dist_store_in_one_process_is_a_store_of_one_worker():
    kv = mx.kv.create("dist_sync")
    assert (kv.type, kv.rank, kv.num_workers) == ("dist_sync", 0, 1)
    kv.init("w", mx.nd.ones((2,)))
    kv.push("w", [mx.nd.ones((2,)), mx.nd.ones((2,))])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == [2.0, 2.0]
    with pytest.raises(mx.MXNetError, match="dist_async"):
        mx.kv.create("dist_async")
