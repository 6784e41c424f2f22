"""dist_sync over MPI, started through `python -m minimod.launch` (needs the `dist` extra).

Several workers, each fitting on its shard with batches of 8, end with the parameters of one
process fitting on batches of 8 * N; the kvstore API holds across 3 ranks.
"""
import os
import sys

import numpy as np
import pytest

import minimod as mx

from .launchutil import launch

pytest.importorskip("mpi4py", reason="the dist extra (mpi4py) is not installed")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_worker  # noqa: E402

PARAMS = ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")


@pytest.mark.parametrize("workers,kvstore,ndev,opt,on_kvstore", [
    (2, "dist_sync", 1, "sgd", "1"),           # Module's flat update: one allreduce a step
    (2, "dist_device_sync", 2, "mysgd", "1"),  # per-key pushes packed per dtype, staging
    (3, "dist_sync", 2, "mysgd", "1"),
    (2, "dist_sync", 2, "sgd", "0"),           # optimizer on the devices: allreduce
])
def test_workers_on_shards_match_one_process_on_whole_batches(tmp_path, workers, kvstore,
                                                               ndev, opt, on_kvstore):
    rc, out, _ = launch(["-n", str(workers), "--timeout", "60", "--",
                         "python", os.path.join(HERE, "dist_worker.py"), str(tmp_path),
                         kvstore, str(ndev), opt], timeout=90,
                        env={"MXNET_UPDATE_ON_KVSTORE": on_kvstore})
    assert rc == 0, out
    ranks = [np.load(tmp_path / ("params-rank%d.npz" % r)) for r in range(workers)]
    (tmp_path / "ref").mkdir()
    with mx.name.NameManager():
        one = dist_worker.train(str(tmp_path / "ref"), "local", 1, opt, as_workers=workers)
    steps = dist_worker.SAMPLES // (dist_worker.PER_WORKER * workers) * dist_worker.EPOCHS
    for r, got in enumerate(ranks):
        assert int(got["workers"]) == workers
        # rescale_grad = 1 / (batch_size * num_workers), as MXNet's Module sets it
        assert float(got["rescale_grad"]) == pytest.approx(1.0 / (8 * workers), rel=1e-12)
        assert int(got["steps"]) == int(one["steps"]) == steps
        assert int(got["allreduce_calls"]) == steps  # the whole model in one allreduce a step
        for name in PARAMS:
            np.testing.assert_array_equal(got[name], ranks[0][name])  # replicas identical
            np.testing.assert_allclose(got[name], one[name], rtol=1e-5, atol=1e-6,
                                       err_msg="rank %d %s" % (r, name))
    # epoch-end checkpoints come from rank 0 only
    written = sorted(os.listdir(tmp_path))
    assert "ckpt-r0-0002.params" in written and "ckpt-r0-symbol.json" in written
    assert not [f for f in written if f.startswith("ckpt-r") and not f.startswith("ckpt-r0")]
    arg, _ = mx.model.load_params(str(tmp_path / "ckpt-r0"), dist_worker.EPOCHS)
    np.testing.assert_array_equal(arg["fc1_weight"].asnumpy(), ranks[0]["fc1_weight"])


def test_kvstore_api_across_three_ranks(tmp_path):
    rc, out, _ = launch(["-n", "3", "--timeout", "60", "--", "python",
                         os.path.join(HERE, "dist_api_worker.py"), str(tmp_path)], timeout=90)
    assert rc == 0, out
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("ok-")) == \
        ["ok-rank0", "ok-rank1", "ok-rank2"]


@pytest.mark.parametrize("workers", [2, 3])
def test_row_sparse_values_across_ranks(tmp_path, workers):
    """init takes rank 0's rows; pushes sum on the union of every rank's rows, which every
    replica's optimizer updates lazily, as one store given all the pushes."""
    rc, out, _ = launch(["-n", str(workers), "--timeout", "60", "--", "python",
                         os.path.join(HERE, "dist_rsp_worker.py"), str(tmp_path)], timeout=90)
    assert rc == 0, out
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("ok-")) == \
        ["ok-rank%d" % r for r in range(workers)]


def test_dist_store_in_one_process_is_a_store_of_one_worker(tmp_path):
    kv = mx.kv.create("dist_sync")
    assert (kv.type, kv.rank, kv.num_workers) == ("dist_sync", 0, 1)
    kv.init(["w", "v"], [mx.nd.ones((2,)), mx.nd.zeros((3,), dtype=np.float64)])
    kv.push(["w", "v"], [[mx.nd.ones((2,)), mx.nd.ones((2,), ctx=mx.cpu(1))],
                         [mx.nd.ones((3,), dtype=np.float64)]])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == [2.0, 2.0]
    assert kv.stats["allreduce_calls"] == 0  # nothing to exchange with one worker
    kv.init("r", mx.nd.sparse.zeros("row_sparse", (4, 2)))
    kv.push("r", [mx.nd.array([[0, 0], [1, 1], [0, 0], [0, 0]]).tostype("row_sparse")] * 2)
    assert kv.stored("r").stype == "row_sparse" and kv.stored("r").indices.asnumpy() == [1]
    np.testing.assert_array_equal(kv.stored("r").asnumpy()[1], [2, 2])
    with pytest.raises(mx.MXNetError, match="shape"):
        kv.push("w", mx.nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="has not been initialized"):
        kv.push("nope", mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    kv.save_optimizer_states(str(tmp_path / "s.states"))
    assert (tmp_path / "s.states").exists()
    kv.barrier()
    assert mx.kv.create("dist_sync_device").type == "dist_device_sync"
    assert mx.kv.create("dist").type == "dist_sync"  # MXNet's alias


@pytest.mark.parametrize("name", ["dist_async", "dist_device_async", "dist_sync_x"])
def test_unsupported_dist_types_say_to_use_dist_sync(name):
    with pytest.raises(mx.MXNetError, match="'dist_sync'"):
        mx.kv.create(name)


@pytest.mark.parametrize("opt,on_kvstore", [("sgd", "1"), ("adam", "1"), ("sgd", "0")])
def test_sparse_grad_embeddings_update_every_workers_rows(tmp_path, opt, on_kvstore):
    """Two workers whose batches look up disjoint halves of the table end with the table of one
    process on the whole batches: gradients summed, the union of the rows updated lazily (a
    replica updating only its own worker's rows would differ from the other)."""
    import dist_sparse_worker
    rc, out, _ = launch(["-n", "2", "--timeout", "60", "--", "python",
                         os.path.join(HERE, "dist_sparse_worker.py"), str(tmp_path),
                         "dist_sync", opt], timeout=90,
                        env={"MXNET_UPDATE_ON_KVSTORE": on_kvstore})
    assert rc == 0, out
    ranks = [np.load(tmp_path / ("table-rank%d.npy" % r)) for r in range(2)]
    one = dist_sparse_worker.train(str(tmp_path), "local", opt, as_workers=2)
    np.testing.assert_array_equal(ranks[0], ranks[1])
    np.testing.assert_allclose(ranks[0], one, rtol=1e-5, atol=1e-6)
