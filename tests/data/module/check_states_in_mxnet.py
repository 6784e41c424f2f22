"""MXNet 1.9.1 resumes from `Module.save_optimizer_states_mxnet` (run by hand, not in CI).

    python tests/data/module/check_states_in_mxnet.py   # needs /tmp/mxenv (MXNet 1.9.1)

For one device and for two (kvstore 'local', updating on the store), minimod trains an MLP a
few SGD-momentum steps, saves the checkpoint and the MXNet-format states with the one line
the docstring gives; MXNet's `Module.load(..., load_optimizer_states=True)` then resumes, and
its updater's momentum arrays must equal minimod's.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import minimod as mx  # noqa: E402

MXNET_SIDE = r'''
import sys, numpy as np, mxnet as mx
prefix, ndev, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = [mx.cpu(i) for i in range(ndev)]
mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=ctx)
mod.bind(data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
updater = mod._kvstore._updater if mod._update_on_kvstore else mod._updater
np.savez(out_path, **{str(k): v.asnumpy() for k, v in updater.states.items()})
'''


def train(prefix: str, ndev: int) -> dict:
    rng = np.random.RandomState(0)
    x, y = rng.randn(16, 5).astype("float32"), rng.randint(0, 3, 16).astype("float32")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(i) for i in range(ndev)])
    mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=1, optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.save_checkpoint(prefix, 1)
    mod.save_optimizer_states_mxnet("%s-%04d.states" % (prefix, 1))
    updater = mod._kvstore._updater if mod._update_on_kvstore else mod._updater
    return {str(k): v.asnumpy() for k, v in updater.states.items()}


def main():
    python = os.environ.get("MXNET_PY", "/tmp/mxenv/bin/python")
    with tempfile.TemporaryDirectory() as tmp:
        for ndev in (1, 2):
            prefix = os.path.join(tmp, "mlp%d" % ndev)
            ours = train(prefix, ndev)
            out = os.path.join(tmp, "theirs%d.npz" % ndev)
            subprocess.run([python, "-c", MXNET_SIDE, prefix, str(ndev), out], check=True,
                           stderr=subprocess.DEVNULL)
            theirs = np.load(out)
            assert sorted(theirs.files) == sorted(ours), (sorted(theirs.files), sorted(ours))
            for key, value in ours.items():
                np.testing.assert_array_equal(theirs[key], value)
            print("%d device(s): MXNet resumed with minimod's %d momentum arrays: %s"
                  % (ndev, len(ours), ", ".join(sorted(ours))))


if __name__ == "__main__":
    main()
