"""Random numbers inside CUDA graphs: Dropout, the RNN op's dropout and the uniform and normal
samplers draw from minimod.device_rng on a GPU, whose state lives in device memory, so their
steps are captured and every replay draws new numbers, the same numbers an eager run draws.

The generator's arithmetic (`host_uniform`) is checked everywhere. The GPU cases run on a GPU,
where the kernels must give `host_uniform`'s numbers bit for bit, or on the strict CuPy
stand-in (tests/test_fake_gpu.py runs this file on it), whose kernels are `host_uniform` and
whose captures record without running, so a draw whose position were baked into the graph
would repeat its mask at every replay.
"""
import numpy as np
import pytest

import minimod as mx
from minimod import backend, device_rng

from ..conftest import needs_gpu
from ..ops.test_fused_kernels import _compile, _nvrtc


def test_host_sequence_is_uniform_and_computable_out_of_order():
    whole = device_rng.host_uniform(7, 0, 200_000)
    assert whole.dtype == np.float32 and whole.min() >= 0 and whole.max() < 1
    assert abs(whole.mean() - 0.5) < 0.005 and abs(whole.var() - 1 / 12) < 0.002
    # 2^24 equally likely values: 200k draws repeat about n^2 / 2^25 = 1192 of them (a
    # Poisson count, sd about 35)
    assert abs(whole.size - len(np.unique(whole)) - 1192) < 200
    # any stretch is the same numbers, however the draws are split
    np.testing.assert_array_equal(device_rng.host_uniform(7, 1000, 500), whole[1000:1500])
    assert not np.array_equal(device_rng.host_uniform(8, 0, 1000), whole[:1000])
    # neighbouring positions are not correlated
    assert abs(np.corrcoef(whole[:-1], whole[1:])[0, 1]) < 0.01


@pytest.mark.skipif(_nvrtc() is None, reason="NVRTC not installed (pip install -e '.[nvrtc]')")
def test_kernels_compile_with_nvrtc():
    status, log = _compile(_nvrtc(), device_rng.SOURCE, "device_rng.cu")
    assert status == 0, log


@needs_gpu
def test_device_draws_follow_the_host_sequence_and_reseed_in_place():
    mx.random.seed(11)
    with backend.device_scope(mx.gpu(0)):
        xp = backend.xp_for(mx.gpu(0))
        first = device_rng.uniform(xp, 0, (3, 5))
        second = device_rng.uniform(xp, 0, (7,))
        state = device_rng._STATES[(xp, 0)]
        np.testing.assert_array_equal(backend.asnumpy(first).ravel(),
                                      device_rng.host_uniform(11, 0, 15))
        np.testing.assert_array_equal(backend.asnumpy(second),
                                      device_rng.host_uniform(11, 15, 7))
        mx.random.seed(11)
        again = device_rng.uniform(xp, 0, (15,))
        assert device_rng._STATES[(xp, 0)] is state  # a graph holding it sees the reseed
        np.testing.assert_array_equal(backend.asnumpy(again), backend.asnumpy(first).ravel())
        assert device_rng.uniform(xp, 0, (0, 4)).shape == (0, 4)


def _dropout_net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=12, name="fc1")
    net = mx.sym.Dropout(mx.sym.Activation(net, act_type="relu"), p=0.4, name="drop")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (6, 5)}


def _rnn_net():
    data = mx.sym.Variable("data")
    out = mx.sym.RNN(data, mx.sym.Variable("rnn_params"), mx.sym.Variable("rnn_state"),
                     mx.sym.Variable("rnn_state_cell"), state_size=6, num_layers=2,
                     mode="lstm", p=0.3, name="rnn")
    net = mx.sym.FullyConnected(mx.sym.reshape(out, shape=(-1, 6)), num_hidden=3, name="fc")
    shapes = {"data": (4, 3, 5), "rnn_state": (2, 3, 6), "rnn_state_cell": (2, 3, 6)}
    return mx.sym.SoftmaxOutput(net, name="softmax"), shapes


def _train(build, graphs, monkeypatch, reseed_at=None, steps=5):
    """Outputs and gradients of every step of an executor (no update: the data and weights
    stay, only the masks change), and its final graph status."""
    monkeypatch.setenv("MINIMOD_CUDA_GRAPHS", "1" if graphs else "0")
    mx.random.seed(3)
    net, shapes = build()
    exe = net.simple_bind(mx.gpu(0), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape) if name != "softmax_label" else \
            rng.randint(0, 3, arr.shape)
    seen = []
    for i in range(steps):
        if i == reseed_at:
            mx.random.seed(5)
        exe.forward_backward()
        seen.append([exe.outputs[0].asnumpy()]
                    + [g.asnumpy() for g in exe.grad_arrays if g is not None])
    return seen, exe.graph_status()


def _noise_net():
    data = mx.sym.Variable("data")
    noisy = (data * mx.sym.random.uniform(low=0.5, high=1.5, shape=(6, 5))
             + mx.sym.random.normal(loc=0.0, scale=0.1, shape=(6, 5)))
    net = mx.sym.FullyConnected(noisy, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (6, 5)}


def _more_noise_net():
    """Exponential noise, an RReLU (training: random slopes) and an integer mask from randint
    in one step."""
    data = mx.sym.Variable("data")
    noisy = data * mx.sym.random.exponential(scale=0.25, shape=(6, 5))
    mask = mx.sym.cast(mx.sym.random.randint(low=0, high=2, shape=(6, 5)), dtype="float32")
    net = mx.sym.LeakyReLU(noisy * mask - 0.1, act_type="rrelu", name="rrelu")[0]
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax"), {"data": (6, 5)}


@needs_gpu
def test_device_exponential_randint_and_rrelu_samples_have_their_laws():
    mx.random.seed(4)
    exe = mx.sym.Group([mx.sym.random.exponential(scale=0.5, shape=(400, 500)),
                        mx.sym.random.randint(low=-3, high=4, shape=(400, 500))]).simple_bind(
        mx.gpu(0), grad_req="null")
    exp, ints = (o.asnumpy() for o in exe.forward())
    assert exp.min() >= 0 and abs(exp.mean() - 0.5) < 0.005 and abs(exp.std() - 0.5) < 0.005
    assert abs((exp > 1.0).mean() - np.exp(-2.0)) < 0.003  # the tail: P(X > 1) = e^-2
    assert ints.dtype == np.int32 and set(np.unique(ints)) == set(range(-3, 4))
    assert np.abs(np.bincount(ints.ravel() + 3) / ints.size - 1 / 7).max() < 0.003
    x = mx.sym.Variable("x")
    act = mx.sym.LeakyReLU(x, act_type="rrelu", lower_bound=0.2, upper_bound=0.6)[0]
    exe = act.simple_bind(mx.gpu(0), x=(400, 500), grad_req="null")
    exe.arg_dict["x"][:] = -1.0
    slopes = -exe.forward(is_train=True)[0].asnumpy()
    assert slopes.min() >= 0.2 and slopes.max() < 0.6 and abs(slopes.mean() - 0.4) < 0.002


@needs_gpu
def test_device_uniform_and_normal_samples_have_their_moments():
    mx.random.seed(2)
    exe = mx.sym.Group([mx.sym.random.uniform(low=-1, high=3, shape=(400, 500)),
                        mx.sym.random.normal(loc=2, scale=0.5, shape=(400, 500))]).simple_bind(
        mx.gpu(0), grad_req="null")
    uni, nor = (o.asnumpy() for o in exe.forward())
    assert uni.min() >= -1 and uni.max() < 3 and abs(uni.mean() - 1) < 0.01
    assert abs(uni.var() - 16 / 12) < 0.01
    assert abs(nor.mean() - 2) < 0.005 and abs(nor.std() - 0.5) < 0.005
    assert abs(((nor - 2) / 0.5 > 1.96).mean() - 0.025) < 0.003  # the tail, not only moments


@needs_gpu
@pytest.mark.parametrize("build", [_dropout_net, _rnn_net, _noise_net, _more_noise_net],
                         ids=["Dropout", "RNN", "uniform-normal", "exponential-randint-RReLU"])
def test_random_steps_are_captured_and_draw_anew_at_each_replay(build, monkeypatch):
    want, eager = _train(build, False, monkeypatch, reseed_at=3)
    got, status = _train(build, True, monkeypatch, reseed_at=3)
    assert eager == {"all": "eager: MINIMOD_CUDA_GRAPHS=0"}
    assert status == {("train", True): "graph"}, status
    for step, (a, b) in enumerate(zip(want, got)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(y, x, err_msg="step %d" % step)
    # step 1 is the capture's first replay, step 2 the next: each drew masks of its own
    assert not np.array_equal(got[1][0], got[2][0])
