"""Write svrg_golden.npz: SVRGModule training trajectories under MXNet 1.9.1.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    MXNET_MKLDNN_ENABLED=0 OMP_NUM_THREADS=1 python tests/data/contrib/gen_svrg_golden.py

A linear regression (FullyConnected with one output, LinearRegressionOutput) on fixed data,
started from fixed parameters, trained with `SVRGModule.fit`. Per scenario the file holds the
parameters after every batch and every epoch, and the full-gradient snapshots (`_param_dict`)
at every epoch's end. Scenarios:
  one_dev      one CPU context, batch 10 over 45 samples (the last batch padded), plain SGD,
               update_freq 2 over 5 epochs;
  one_dev_mom  the same with momentum 0.9 and weight decay, update_freq 1, 3 epochs;
  two_dev      contexts cpu(0) and cpu(1) with kvstore 'local' (updates on the store and the
               full gradients accumulated under the '<name>_full' keys), update_freq 2,
               4 epochs.
"""
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet.contrib.svrg_optimization.svrg_module import SVRGModule  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

rs = np.random.RandomState(7)
X = rs.uniform(-1, 1, (45, 3)).astype("float32")
W_TRUE = np.array([[1.5, -2.0, 0.5]], dtype="float32")
Y = (X @ W_TRUE.T)[:, 0] + 0.3 + 0.05 * rs.randn(45).astype("float32")
W0 = rs.uniform(-0.1, 0.1, (1, 3)).astype("float32")
B0 = np.zeros((1,), dtype="float32")

SCENARIOS = {
    "one_dev": dict(ctx=[mx.cpu(0)], kv="local", freq=2, epochs=5,
                    opt=dict(learning_rate=0.05)),
    "one_dev_mom": dict(ctx=[mx.cpu(0)], kv="local", freq=1, epochs=3,
                        opt=dict(learning_rate=0.05, momentum=0.9, wd=0.01)),
    "two_dev": dict(ctx=[mx.cpu(0), mx.cpu(1)], kv="local", freq=2, epochs=4,
                    opt=dict(learning_rate=0.05)),
}


def network():
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("lin_reg_label")
    fc = mx.sym.FullyConnected(data, num_hidden=1, name="fc1")
    return mx.sym.LinearRegressionOutput(fc, label, name="lro")


def run(spec):
    it = mx.io.NDArrayIter(X, Y, batch_size=10, shuffle=False, label_name="lin_reg_label")
    mod = SVRGModule(network(), data_names=["data"], label_names=["lin_reg_label"],
                     context=spec["ctx"], update_freq=spec["freq"])
    per_batch, per_epoch, snaps = [], [], []

    def on_batch(param):
        arg, _ = param.locals["self"].get_params()
        per_batch.append(np.concatenate([arg["fc1_weight"].asnumpy().ravel(),
                                         arg["fc1_bias"].asnumpy().ravel()]))

    def on_epoch(epoch, sym, arg, aux):
        per_epoch.append(np.concatenate([arg["fc1_weight"].asnumpy().ravel(),
                                         arg["fc1_bias"].asnumpy().ravel()]))
        snaps.append(np.stack([np.concatenate([d["fc1_weight"].asnumpy().ravel(),
                                               d["fc1_bias"].asnumpy().ravel()])
                               for d in mod._param_dict]))

    mod.fit(it, eval_metric="mse", optimizer="sgd", optimizer_params=spec["opt"],
            num_epoch=spec["epochs"], kvstore=spec["kv"],
            arg_params={"fc1_weight": mx.nd.array(W0), "fc1_bias": mx.nd.array(B0)},
            batch_end_callback=on_batch, epoch_end_callback=on_epoch)
    return np.stack(per_batch), np.stack(per_epoch), np.stack(snaps)


def main():
    out = {"X": X, "Y": Y, "W0": W0, "B0": B0}
    for name, spec in SCENARIOS.items():
        batch, epoch, snaps = run(spec)
        out[name + "/batch"] = batch
        out[name + "/epoch"] = epoch
        out[name + "/full_grads"] = snaps
    np.savez(os.path.join(HERE, "svrg_golden.npz"), **out)
    for key in sorted(out):
        print(key, out[key].shape)
    print(out["one_dev/epoch"])
    print(out["two_dev/epoch"])


if __name__ == "__main__":
    main()
