"""`mx.nd.sgd_mom_update` and the other optimizer kernels that custom Optimizer subclasses
call, against MXNet 1.9.1's own kernels (tests/data/optimizer/update_kernels.npz, written by
gen_update_kernels.py): three steps each, weights and states compared bit for bit."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import MXNetError

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data", "optimizer",
                              "update_kernels.npz"))
CASES = sorted({k.split("/")[0] for k in GOLDEN.files})


@pytest.mark.parametrize("cid", CASES)
def test_kernel_matches_mxnet_bit_for_bit(cid):
    meta = json.loads(str(GOLDEN[cid + "/meta"]))
    weight = mx.nd.array(GOLDEN[cid + "/w0"])
    states = [mx.nd.array(GOLDEN["%s/s%d_0" % (cid, i)]) for i in range(meta["n_states"])]
    kernel = getattr(mx.nd, meta["kernel"])
    assert all(np.isfinite(GOLDEN[k]).all() for k in GOLDEN.files
               if k.startswith(cid + "/") and not k.endswith("meta"))
    for step in range(1, 4):
        grad = mx.nd.array(GOLDEN["%s/g%d" % (cid, step)])
        assert kernel(weight, grad, *states, out=weight, **meta["kwargs"]) is weight
        np.testing.assert_array_equal(weight.asnumpy(), GOLDEN["%s/w%d" % (cid, step)],
                                      err_msg="%s weight, step %d" % (cid, step))
        for i, s in enumerate(states):
            np.testing.assert_array_equal(s.asnumpy(), GOLDEN["%s/s%d_%d" % (cid, i, step)],
                                          err_msg="%s state %d, step %d" % (cid, i, step))


def test_every_kernel_is_covered():
    kernels = {json.loads(str(GOLDEN[c + "/meta"]))["kernel"] for c in CASES}
    assert kernels == set(mx.optimizer.UPDATE_KERNELS)


def test_without_out_the_weight_is_left_alone_and_states_still_move():
    w, g, m = mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.zeros((3,))
    new = mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9)
    assert w.asnumpy().tolist() == [1.0] * 3
    np.testing.assert_allclose(new.asnumpy(), 0.9)
    np.testing.assert_allclose(m.asnumpy(), -0.1)
    other = mx.nd.zeros((3,))
    assert mx.nd.sgd_update(w, g, 0.5, out=other) is other  # lr positionally, as in MXNet
    np.testing.assert_allclose(other.asnumpy(), 0.5)


def test_a_custom_optimizer_written_against_the_kernels_trains_like_sgd():
    """The pattern of MXNet's own optimizers, as user subclasses copy it."""

    @mx.optimizer.register
    class KernelSGD(mx.optimizer.Optimizer):
        def __init__(self, momentum=0.0, **kwargs):
            super().__init__(**kwargs)
            self.momentum = momentum

        def create_state(self, index, weight):
            return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

        def update(self, index, weight, grad, state):
            self._update_count(index)
            mx.nd.sgd_mom_update(weight, grad, state, out=weight, lr=self._get_lr(index),
                                 wd=self._get_wd(index), momentum=self.momentum,
                                 rescale_grad=self.rescale_grad)

    rng = np.random.RandomState(0)
    x = rng.randn(64, 6).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.float32)
    params = []
    for name in ("kernelsgd", "sgd"):
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
                                                         name="fc"), name="softmax")
        mod = mx.mod.Module(net)
        mx.random.seed(3)
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=16), num_epoch=2, optimizer=name,
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001},
                initializer=mx.init.Xavier())
        params.append(mod.get_params()[0])
    for key in params[0]:
        np.testing.assert_allclose(params[0][key].asnumpy(), params[1][key].asnumpy(),
                                   rtol=1e-6, atol=1e-7)


def test_bad_arguments_name_the_kernel():
    w = mx.nd.ones((3,))
    with pytest.raises(MXNetError, match=r"mx.nd.sgd_mom_update: state 0 has shape \(2,\)"):
        mx.nd.sgd_mom_update(w, w, mx.nd.zeros((2,)), lr=0.1)
    with pytest.raises(TypeError, match="mx.nd.adam_update: grad must be an NDArray"):
        mx.nd.adam_update(w, np.ones(3), w, w, lr=0.1)
