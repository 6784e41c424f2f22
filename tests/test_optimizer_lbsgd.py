"""mx.optimizer.LBSGD: the weights MXNet 1.9.1's LBSGD gives over 12 updates of two
parameters, for each warm-up strategy and LARS (tests/data/optimizer/lbsgd_golden.npz,
written by gen_lbsgd_golden.py), and a Module trained with it."""
import json
import os

import numpy as np
import pytest

import minimod as mx

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data", "optimizer",
                              "lbsgd_golden.npz"))
CONFIGS = sorted({k.split("/")[0] for k in GOLDEN.files if "/" in k})


@pytest.mark.parametrize("name", CONFIGS)
def test_updates_match_mxnet(name):
    kwargs = json.loads(str(GOLDEN[name + "/kwargs"]))
    opt = mx.optimizer.create("lbsgd", **kwargs)
    weights = [mx.nd.array(GOLDEN["w0_%d" % i]) for i in range(2)]
    states = [opt.create_state(i, w) for i, w in enumerate(weights)]
    for step in range(12):
        for i, w in enumerate(weights):
            opt.update(i, w, mx.nd.array(GOLDEN["g%d_%d" % (step, i)]), states[i])
            np.testing.assert_allclose(w.asnumpy(), GOLDEN["%s/s%d_%d" % (name, step, i)],
                                       rtol=1e-5, atol=1e-6)


def test_module_trains_with_it_and_bad_settings_are_refused():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 5).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2),
                               name="softmax")
    it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="softmax_label")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=6, optimizer="lbsgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "batch_scale": 2,
                              "warmup_epochs": 2, "updates_per_epoch": 8})
    assert dict(mod.score(it, "acc"))["accuracy"] > 0.8
    with pytest.raises(ValueError, match="warmup_strategy must be one of"):
        mx.optimizer.create("lbsgd", warmup_strategy="cosine")
