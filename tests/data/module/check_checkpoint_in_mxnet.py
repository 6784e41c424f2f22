"""Checkpoints minimod writes load in MXNet 1.9.1 and predict the same (run by hand, not in CI).

    python tests/data/module/check_checkpoint_in_mxnet.py   # needs /tmp/mxenv (oracle venv)

minimod trains the digits convnet briefly, saves prefix-symbol.json, prefix-0001.params and
prefix-0001.states (and an MXNet-format pickle of the states); MXNet then loads the checkpoint,
its optimizer states (from the pickle), predicts, and the predictions are compared.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

MXNET_SIDE = r'''
import sys, numpy as np, mxnet as mx
prefix, x_path, out_path = sys.argv[1:4]
mod = mx.mod.Module.load(prefix, 1)
x = np.load(x_path)
mod.bind(data_shapes=[("data", x.shape)], for_training=False)
mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
np.save(out_path, mod.get_outputs()[0].asnumpy())
train = mx.mod.Module.load(prefix, 1)
train.bind(data_shapes=[("data", x.shape)], label_shapes=[("softmax_label", (x.shape[0],))])
train.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
train.load_optimizer_states(prefix + "-0001.mxnet-states")
print("MXNet loaded the optimizer states for", len(train._updater.states), "keys")
'''


def main():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    import minimod as mx
    from minimod.datasets import load_digits
    from minimod.examples.train_digits import convnet
    (tx, ty), (vx, _) = load_digits()
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "digits")
        mod = mx.mod.Module(convnet())
        mod.fit(mx.io.NDArrayIter(tx[:256], ty[:256], batch_size=32), num_epoch=1,
                optimizer_params={"learning_rate": 0.05, "momentum": 0.9})
        mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
        with open(prefix + "-0001.mxnet-states", "wb") as f:
            f.write(mod._updater.get_states_mxnet())
        x = vx[:16]
        np.save(os.path.join(tmp, "x.npy"), x)
        mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
        mine = mod.get_outputs()[0].asnumpy()
        script = os.path.join(tmp, "side.py")
        with open(script, "w") as f:
            f.write(MXNET_SIDE)
        subprocess.run([os.environ.get("MXNET_PY", "/tmp/mxenv/bin/python"), script, prefix,
                        os.path.join(tmp, "x.npy"), os.path.join(tmp, "theirs.npy")],
                       check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        theirs = np.load(os.path.join(tmp, "theirs.npy"))
        print("max |minimod - mxnet| over predictions:", float(np.abs(mine - theirs).max()))
        assert np.allclose(mine, theirs, rtol=1e-4, atol=1e-5)
        print("OK: MXNet 1.9.1 loads minimod's checkpoint and predicts the same")


if __name__ == "__main__":
    main()
