"""Tests of minimod.initializer: dispatch, distributions and scales, registry, Load/Mixed,
FusedRNN layout (against MXNet 1.9.1's) and reproducibility."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import minimod as mx
from minimod import initializer as init_mod
from minimod.base import MXNetError
from minimod.initializer import (
    Bilinear,
    Constant,
    FusedRNN,
    InitDesc,
    InitError,
    Initializer,
    Load,
    LSTMBias,
    Mixed,
    MSRAPrelu,
    Normal,
    One,
    Orthogonal,
    Uniform,
    Xavier,
    Zero,
    create,
    register,
)
from minimod.initializer import base as init_base

RNN_GOLDEN = os.path.join(os.path.dirname(__file__), "data", "io", "fused_rnn_layout_golden.json")


def _filled(init, name, shape, attrs=None, dtype="float32"):
    arr = mx.nd.full(shape, 7.0, dtype=dtype)
    init(InitDesc(name, attrs), arr)
    return arr.asnumpy()


# ---------------------------------------------------------------------------------- InitDesc

def test_initdesc_is_a_str_with_attrs():
    desc = InitDesc("fc_weight", {"lr_mult": "2"})
    assert isinstance(desc, str) and desc == "fc_weight" and desc.endswith("weight")
    assert desc.attrs == {"lr_mult": "2"} and desc.global_init is None
    assert InitDesc("x").attrs == {}
    glob = Zero()
    assert InitDesc("x", global_init=glob).global_init is glob


# ---------------------------------------------------------------------------------- dispatch

@pytest.mark.parametrize("name,value", [
    ("fc_bias", 0.0), ("bn_gamma", 1.0), ("bn_beta", 0.0), ("q_min", 0.0), ("q_max", 1.0),
    ("bn_moving_mean", 0.0), ("bn_moving_var", 1.0), ("bn_moving_inv_var", 0.0),
    ("bn_moving_avg", 0.0), ("fc_bias_quantize", 0.0),
])
def test_dispatch_by_suffix_constants(name, value):
    assert np.all(_filled(Uniform(0.5), name, (3, 2)) == value)


def test_dispatch_weight_uses_own_distribution():
    out = _filled(Uniform(0.5), "fc_weight", (50, 40))
    assert np.abs(out).max() <= 0.5 and out.std() > 0.2


def test_weight_quantize_gives_int8_range():
    out = _filled(Uniform(), "fc_weight_quantize", (40, 40), dtype="int8")
    assert out.dtype == np.int8 and out.min() >= -127 and out.max() < 127 and out.std() > 10


def test_init_attr_overrides_the_suffix():
    attrs = {"__init__": '["constant", {"value": 3.5}]'}
    assert np.all(_filled(Xavier(), "fc_bias", (4,), attrs) == 3.5)
    assert np.all(_filled(Xavier(), "anything_at_all", (2, 2), {"__init__": '["one", {}]'}) == 1)
    assert np.all(_filled(Xavier(), "fc_weight", (2, 2), {"__init__": '["zero", {}]'}) == 0)


def test_global_init_is_filled_in():
    desc = InitDesc("fc_weight")
    glob = Normal()
    glob(desc, mx.nd.zeros((2, 2)))
    assert desc.global_init is glob


def test_unknown_pattern_names_the_variable_and_the_fix():
    with pytest.raises(ValueError, match="Unknown initialization pattern") as info:
        Xavier()(InitDesc("my_stray_var"), mx.nd.zeros((2, 2)))
    message = str(info.value)
    assert "'my_stray_var'" in message
    assert "mx.sym.Variable('my_stray_var', init=" in message and "mx.init.Mixed" in message
    assert isinstance(info.value, MXNetError)


def test_unknown_pattern_hints_for_rnn_parameters_and_labels():
    with pytest.raises(InitError, match="FusedRNN"):
        Uniform()(InitDesc("lstm_parameters"), mx.nd.zeros((8,)))
    with pytest.raises(InitError, match="label_names"):
        Uniform()(InitDesc("extra_label"), mx.nd.zeros((8,)))


def test_legacy_str_path():
    init = Uniform(0.3)
    arr = mx.nd.full((3,), 5.0)
    with pytest.warns(DeprecationWarning):
        init("bn_moving_inv_var", arr)
    assert np.all(arr.asnumpy() == 0)
    with pytest.warns(DeprecationWarning):
        init("bn_moving_var", arr)
    assert np.all(arr.asnumpy() == 1)
    weight = mx.nd.zeros((1, 1, 4, 4))
    with pytest.warns(DeprecationWarning):
        init("upsampling0_weight", weight)
    np.testing.assert_allclose(weight.asnumpy(), _reference_bilinear((1, 1, 4, 4)))
    loc = mx.nd.zeros((6,))
    with pytest.warns(DeprecationWarning):
        init("stn_loc_bias", loc)
    assert loc.asnumpy().tolist() == [1, 0, 0, 0, 1, 0]
    with pytest.warns(DeprecationWarning), pytest.raises(InitError, match="'foo'"):
        init("foo", arr)
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="NDArray"):
        init("fc_weight", np.zeros(3))


def test_initializes_in_place_into_views():
    block = mx.nd.zeros((10,))
    view = mx.nd.NDArray(block._data[2:6], block.context)
    One()(InitDesc("fc_weight"), view)
    assert block.asnumpy().tolist() == [0, 0, 1, 1, 1, 1, 0, 0, 0, 0]


# ---------------------------------------------------------------------------------- scales

@pytest.mark.parametrize("rnd_type", ["uniform", "gaussian"])
@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
def test_xavier_scale(rnd_type, factor_type, shape):
    magnitude = 2.5
    out = _filled(Xavier(rnd_type, factor_type, magnitude), "conv_weight", shape)
    receptive = np.prod(shape[2:]) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    scale = np.sqrt(magnitude / factor)
    if rnd_type == "uniform":
        assert np.abs(out).max() <= scale
        assert np.abs(out).max() > 0.99 * scale
        np.testing.assert_allclose(out.std(), scale / np.sqrt(3), rtol=0.03)
    else:
        np.testing.assert_allclose(out.std(), scale, rtol=0.03)
    assert abs(out.mean()) < 0.05 * scale


def test_xavier_rejects_vectors_naming_them():
    with pytest.raises(ValueError, match="'fc_weight'"):
        Xavier()(InitDesc("fc_weight"), mx.nd.zeros((5,)))


def test_xavier_rejects_bad_types_early():
    with pytest.raises(InitError, match="rnd_type"):
        Xavier(rnd_type="laplace")
    with pytest.raises(InitError, match="factor_type"):
        Xavier(factor_type="sum")


def test_msraprelu_scale():
    slope = 0.5
    out = _filled(MSRAPrelu("in", slope), "w_weight", (400, 100))
    np.testing.assert_allclose(out.std(), np.sqrt(2.0 / (1 + slope ** 2) / 100), rtol=0.03)
    init = MSRAPrelu()
    assert init.rnd_type == "gaussian" and init.magnitude == pytest.approx(2 / 1.0625)


def test_uniform_and_normal():
    out = _filled(Uniform(), "w_weight", (200, 200))
    assert out.min() >= -0.07 and out.max() <= 0.07
    np.testing.assert_allclose(out.std(), 0.07 / np.sqrt(3), rtol=0.03)
    out = _filled(Normal(0.2), "w_weight", (200, 200))
    np.testing.assert_allclose(out.std(), 0.2, rtol=0.03)
    assert abs(out.mean()) < 0.01


@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
@pytest.mark.parametrize("shape", [(4, 10), (10, 4), (3, 2, 2, 2)])
def test_orthogonal(rand_type, shape):
    out = _filled(Orthogonal(scale=2.0, rand_type=rand_type), "w_weight", shape)
    flat = out.reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)


def test_constant_zero_one():
    assert np.all(_filled(Constant(2.5), "w_weight", (2, 3)) == 2.5)
    assert _filled(Constant(np.array([1.0, 2.0])), "w_weight", (2, 2)).tolist() == [[1, 2]] * 2
    assert np.all(_filled(Zero(), "w_weight", (2,)) == 0)
    assert np.all(_filled(One(), "w_weight", (2,)) == 1)


def _reference_bilinear(shape):
    # The per-element formula of MXNet's bilinear kernel, written as a loop.
    weight = np.zeros(int(np.prod(shape)), dtype="float32")
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    for i in range(weight.size):
        x, y = i % shape[3], i // shape[3] % shape[2]
        weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return weight.reshape(shape)


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (1, 2, 3, 5), (1, 1, 1, 1)])
def test_bilinear_matches_reference(shape):
    np.testing.assert_allclose(_filled(Bilinear(), "up_weight", shape),
                               _reference_bilinear(shape), rtol=1e-6)


def test_lstmbias():
    out = _filled(LSTMBias(2.0), "lstm_bias", (12,), {"__init__": LSTMBias(2.0).dumps()})
    assert out.tolist() == [0] * 3 + [2] * 3 + [0] * 6


# ---------------------------------------------------------------------------------- Mixed / Load

def test_mixed_first_match_wins():
    init = Mixed(["fc1_.*", "fc.*", ".*"], [Constant(1), Constant(2), Zero()])
    assert np.all(_filled(init, "fc1_weight", (2,)) == 1)
    assert np.all(_filled(init, "fc2_weight", (2,)) == 2)
    assert np.all(_filled(init, "conv_weight", (2,)) == 0)
    # the sub-initializer still dispatches by suffix
    assert np.all(_filled(init, "fc2_bias", (2,)) == 0)


def test_mixed_no_match_names_the_parameter():
    with pytest.raises(ValueError, match="'conv_weight'"):
        Mixed(["fc.*"], [Zero()])(InitDesc("conv_weight"), mx.nd.zeros((2,)))
    with pytest.raises(InitError, match="one initializer per pattern"):
        Mixed(["a", "b"], [Zero()])


def test_load_from_dict_strips_prefixes():
    params = {"arg:fc_weight": mx.nd.full((2, 2), 3.0), "aux:bn_moving_mean": mx.nd.ones((2,)),
              "plain": mx.nd.full((1,), 9.0)}
    init = Load(params, default_init=Constant(-1))
    assert sorted(init.param) == ["bn_moving_mean", "fc_weight", "plain"]
    assert np.all(_filled(init, "fc_weight", (2, 2)) == 3)
    assert np.all(_filled(init, "bn_moving_mean", (2,)) == 1)
    assert np.all(_filled(init, "other_weight", (2,)) == -1)


def test_load_from_file_and_errors(tmp_path):
    fname = str(tmp_path / "model-0001.params")
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.full((2, 3), 4.0)})
    init = Load(fname, verbose=True)
    assert np.all(_filled(init, "fc_weight", (2, 3)) == 4)
    with pytest.raises(ValueError, match="'fc_weight'.*target \\(3, 2\\) vs loaded \\(2, 3\\)"):
        init(InitDesc("fc_weight"), mx.nd.zeros((3, 2)))
    with pytest.raises(InitError, match="'fc_bias'.*no default_init"):
        init(InitDesc("fc_bias"), mx.nd.zeros((2,)))
    with pytest.raises(InitError, match="dict"):
        Load([mx.nd.zeros(1)])


# ---------------------------------------------------------------------------------- FusedRNN

def _rnn_golden():
    with open(RNN_GOLDEN) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", _rnn_golden(), ids=lambda c: c["mode"])
def test_rnn_param_layout_matches_mxnet(case):
    result = case["result"]
    pieces = init_mod.rnn_param_layout(result["size"], case["num_hidden"], case["num_layers"],
                                       case["mode"], case["bidirectional"])
    assert [[n, o, list(s)] for n, o, s in pieces] == result["pieces"]


def test_fused_rnn_initialises_pieces():
    case = _rnn_golden()[0]  # lstm, 2 layers, bidirectional, hidden 2, input 3
    size = case["result"]["size"]
    attrs = {"__init__": FusedRNN(Constant(0.5), 2, 2, "lstm", True, forget_bias=3.0).dumps()}
    out = _filled(Uniform(), "lstm_parameters", (size,), attrs)
    for name, offset, shape in case["result"]["pieces"]:
        piece = out[offset:offset + int(np.prod(shape))]
        if name.endswith("_f_bias"):
            assert np.all(piece == 3.0), name
        elif name.endswith("bias"):
            assert np.all(piece == 0.0), name
        else:
            assert np.all(piece == 0.5), name


def test_fused_rnn_falls_back_on_the_global_initializer():
    case = _rnn_golden()[1]  # gru
    size = case["result"]["size"]
    attrs = {"__init__": FusedRNN(None, 3, 1, "gru").dumps()}
    out = _filled(Constant(0.25), "gru_parameters", (size,), attrs)
    weights = [p for p in case["result"]["pieces"] if p[0].endswith("weight")]
    end = max(o + int(np.prod(s)) for _, o, s in weights)
    assert np.all(out[:end] == 0.25) and np.all(out[end:] == 0)


def test_fused_rnn_size_mismatch():
    with pytest.raises(ValueError, match="does not fit"):
        _filled(Zero(), "x_parameters", (17,), {"__init__": FusedRNN(Zero(), 4, 1, "lstm").dumps()})
    with pytest.raises(InitError, match="mode"):
        FusedRNN(None, 4, 1, "transformer")


def test_fused_rnn_accepts_a_json_init():
    init = FusedRNN('["xavier", {"magnitude": 2}]', 4, 1, "rnn_relu")
    assert isinstance(init._init, Xavier) and init._init.magnitude == 2


# ---------------------------------------------------------------------------------- registry

EXPECTED_NAMES = ["bilinear", "constant", "fusedrnn", "lstmbias", "msraprelu", "normal", "one",
                  "ones", "orthogonal", "uniform", "xavier", "zero", "zeros"]


def test_registered_names_match_mxnet():
    assert sorted(init_base._REGISTRY) == EXPECTED_NAMES
    assert create("zeros").__class__ is Zero and create("ONES").__class__ is One


def test_dumps_format_matches_mxnet():
    assert Xavier().dumps() == \
        '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'
    assert MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    assert Uniform().dumps() == '["uniform", {"scale": 0.07}]'
    assert Zero().dumps() == '["zero", {}]'
    assert Constant(np.array([1, 2])).dumps() == '["constant", {"value": [1, 2]}]'
    assert Orthogonal().dumps() == '["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]'
    assert FusedRNN(None, 4, 2, "lstm").dumps() == (
        '["fusedrnn", {"init": null, "num_hidden": 4, "num_layers": 2, "mode": "lstm", '
        '"bidirectional": false, "forget_bias": 1.0}]')
    assert json.loads(FusedRNN(Xavier(), 4, 2, "lstm").dumps())[1]["init"] == Xavier().dumps()


@pytest.mark.parametrize("init", [
    Xavier("gaussian", "in", 2), MSRAPrelu("out", 0.1), Uniform(0.3), Normal(0.5), Zero(),
    One(), Constant(4), Orthogonal(0.5, "normal"), Bilinear(), LSTMBias(0.5),
    FusedRNN(Uniform(0.2), 3, 2, "gru", True, 0.0),
])
def test_dumps_create_round_trip(init):
    again = create(init.dumps())
    assert type(again) is type(init) and again == init and again.dumps() == init.dumps()


def test_create_forms_and_errors():
    xav = Xavier()
    assert create(xav) is xav
    assert create("xavier", magnitude=2).magnitude == 2
    assert isinstance(create({"initializer": "normal", "sigma": 0.3}), Normal)
    assert isinstance(create(initializer="zero"), Zero)
    assert create('{"initializer": "uniform", "scale": 0.2}').scale == 0.2
    with pytest.raises(InitError, match="'nope' is not registered"):
        create("nope")
    with pytest.raises(InitError, match="already an initializer"):
        create(xav, magnitude=3)
    with pytest.raises(TypeError):
        create(3)


def test_register_custom_initializer():
    @register
    class HalfInit(Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.5

    try:
        assert np.all(_filled(create("halfinit"), "w_weight", (2,)) == 0.5)
        assert HalfInit().dumps() == '["halfinit", {}]'
        with pytest.raises(AssertionError, match="subclass of Initializer"):
            register(int)
    finally:
        del init_base._REGISTRY["halfinit"]


def test_equality():
    assert Xavier() == Xavier() and Xavier() != Xavier(magnitude=2) and Zero() != One()
    with pytest.raises(TypeError):
        hash(Xavier())


def test_set_verbosity_logs(caplog):
    init = Uniform().set_verbosity(True)
    with caplog.at_level(logging.INFO):
        init(InitDesc("fc_weight"), mx.nd.zeros((3, 3)))
        init(InitDesc("fc_bias"), mx.nd.zeros((3,)))
    assert "Initialized fc_weight as weight" in caplog.text
    assert "Initialized fc_bias as bias: 0.0" in caplog.text
    init.set_verbosity(True, print_func=lambda arr: "custom!")
    with caplog.at_level(logging.INFO):
        init(InitDesc("fc_weight"), mx.nd.zeros((3, 3)))
    assert "custom!" in caplog.text


def test_mx_init_namespace():
    assert mx.init.Xavier is Xavier and mx.initializer.InitDesc is InitDesc
    assert mx.init.create is create


# ---------------------------------------------------------------------------------- seeding

@pytest.mark.parametrize("init", [Uniform(), Normal(), Xavier(), Xavier("gaussian"),
                                  Orthogonal(), MSRAPrelu()])
def test_seed_makes_initialisation_reproducible(init):
    mx.random.seed(42)
    first = _filled(init, "w_weight", (6, 5))
    mx.random.seed(42)
    second = _filled(init, "w_weight", (6, 5))
    mx.random.seed(43)
    third = _filled(init, "w_weight", (6, 5))
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, third)
