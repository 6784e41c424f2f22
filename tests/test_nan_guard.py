"""The opt-in NaN guard (minimod/numerics.py) and seeded reproducibility (`mx.random.seed`)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import minimod as mx
from minimod.base import NonFiniteError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _guard_off_afterwards():
    before = mx.numerics.is_enabled()
    yield
    mx.numerics.nan_guard(before)


def _loss_through_log():
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    return mx.sym.MakeLoss(mx.sym.sum(mx.sym.log(fc, name="lg"), name="total"), name="loss")


def test_forward_names_the_first_node_with_a_nan():
    ex = _loss_through_log().simple_bind(mx.cpu(), x=(4, 5))
    ex.arg_dict["x"][:] = 1.0
    ex.arg_dict["fc_weight"][:] = -1.0   # fc output negative: log gives NaN, sum stays NaN
    with mx.numerics.nan_guard():
        with pytest.raises(NonFiniteError) as info, np.errstate(invalid="ignore"):
            ex.forward(is_train=True)
    message = str(info.value)
    assert message.startswith("NaN guard: node 'lg' (log) wrote 12 NaN and 0 infinite "
                              "values (of 12) to its output 'lg_output' in forward on cpu(0)")
    assert "total" not in message  # the first bad node, not the ones after it
    assert isinstance(info.value, mx.MXNetError)


def test_backward_names_the_gradient_and_the_forward_node():
    z = mx.sym.Variable("z")
    root = mx.sym.sqrt(mx.sym.FullyConnected(z, num_hidden=2, name="fc"), name="root")
    ex = mx.sym.MakeLoss(mx.sym.sum(root), name="loss").simple_bind(mx.cpu(), z=(2, 3))
    with mx.numerics.nan_guard():
        outputs = ex.forward(is_train=True)   # sqrt(0) = 0: forward is finite
        assert np.isfinite(outputs[0].asnumpy()).all()
        with pytest.raises(NonFiniteError, match=(
                r"node 'root' \(sqrt\) wrote 0 NaN and 4 infinite values \(of 4\) to the "
                r"gradient 'root_backward_data_grad' with respect to its input 'data' "
                r"\(fc_output\) in backward on cpu\(0\)")), np.errstate(divide="ignore"):
            ex.backward()


def test_bad_input_data_is_named_before_forward():
    ex = _loss_through_log().simple_bind(mx.cpu(), x=(4, 5))
    ex.arg_dict["fc_weight"][:] = 1.0
    data = np.ones((4, 5), dtype=np.float32)
    data[2, 3] = np.inf
    with mx.numerics.nan_guard():
        with pytest.raises(NonFiniteError, match="argument 'x' holds 0 NaN and 1 infinite"):
            ex.forward(is_train=True, x=mx.nd.array(data))


def test_guard_off_lets_nan_through_and_context_manager_restores():
    assert not mx.numerics.is_enabled()
    ex = _loss_through_log().simple_bind(mx.cpu(), x=(4, 5))
    ex.arg_dict["x"][:] = 1.0
    ex.arg_dict["fc_weight"][:] = -1.0
    with np.errstate(invalid="ignore"):
        out = ex.forward(is_train=True)[0].asnumpy()
        assert np.isnan(out).all()
        with mx.numerics.nan_guard():
            assert mx.numerics.is_enabled()
        assert not mx.numerics.is_enabled()
        mx.numerics.nan_guard(True)  # called without `with`, it stays on
        assert mx.numerics.is_enabled()
        with pytest.raises(NonFiniteError):
            ex.forward(is_train=True)


def test_fit_stops_at_the_batch_and_names_the_node():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 4).astype(np.float32)
    x[44] = np.nan  # sample 44: batch 5 (batch size 8), second half, so device cpu(1)
    y = (rng.rand(64) > 0.5).astype(np.float32)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=2, name="fc1")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    train = mx.io.NDArrayIter(x, y, batch_size=8)
    mx.numerics.nan_guard(True)
    with pytest.raises(NonFiniteError, match=(
            r"^epoch 0, batch 5: NaN guard: argument 'data' holds 4 NaN and 0 infinite values "
            r"\(of 16\) before forward on cpu\(1\)")):
        mod.fit(train, num_epoch=2, optimizer="sgd")


def test_fit_names_the_node_whose_gradient_explodes():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=1, name="fc1")
    net = mx.sym.LinearRegressionOutput(mx.sym.exp(net, name="grow"), name="out")
    mod = mx.mod.Module(net, label_names=["out_label"])
    x = np.full((16, 2), 30.0, dtype=np.float32)
    train = mx.io.NDArrayIter(x, np.zeros(16, dtype=np.float32), batch_size=4,
                              label_name="out_label")
    with mx.numerics.nan_guard(), np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(NonFiniteError, match=r"^epoch 0, batch \d+: NaN guard: node "):
            mod.fit(train, num_epoch=1, optimizer="sgd", initializer=mx.init.One(),
                    optimizer_params={"learning_rate": 10.0})


def test_environment_variable_switches_it_on():
    code = ("import minimod as mx, numpy as np\n"
            "x = mx.sym.Variable('x')\n"
            "ex = mx.sym.log(x, name='lg').simple_bind(mx.cpu(), x=(2,))\n"
            "np.seterr(all='ignore')\n"
            "ex.arg_dict['x'][:] = -1\n"
            "try:\n    ex.forward()\nexcept mx.base.NonFiniteError as e:\n    print(e)\n")
    env = dict(os.environ, MINIMOD_NAN_GUARD="1", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert "node 'lg' (log) wrote 2 NaN" in out.stdout, out.stderr


# ---------------------------------------------------------------------------- reproducibility

def _train_once(seed):
    mx.random.seed(seed)
    rng = np.random.RandomState(7)  # the data is fixed; the seed drives init, dropout, shuffle
    x = rng.randn(96, 10).astype(np.float32)
    y = rng.randint(0, 3, 96).astype(np.float32)
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Dropout(net, p=0.5, name="drop1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    train = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=True)
    mod.fit(train, num_epoch=3, optimizer="sgd", initializer=mx.init.Xavier(),
            optimizer_params={"learning_rate": 0.1})
    arg_params, _ = mod.get_params()
    return {k: v.asnumpy() for k, v in arg_params.items()}


def test_two_seeded_runs_give_identical_parameters():
    first, second = _train_once(42), _train_once(42)
    assert sorted(first) == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"]
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    other = _train_once(43)  # the seed matters: another seed trains differently
    assert not np.array_equal(first["fc1_weight"], other["fc1_weight"])
