"""Every ONNX conversion, run in ONNX Runtime against minimod's own forward(is_train=False).

One case per operator form: the exported graph must compute the same numbers (float32
tolerance) with the same shapes. Cases are listed by family; the last test checks that every
converter the exporter registers has a case here.
"""
import numpy as np
import pytest

import minimod as mx
from minimod.onnx import get_operator_support

from .helpers import export_and_run, minimod_forward, random_params

pytest.importorskip("onnx", reason="the onnx extra is not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime (test extra) is not installed")

S = mx.sym
D = S.var("data")
D2 = S.var("rhs")


def _x(shape, low=None, high=None, seed=1, dtype=np.float32):
    rng = np.random.RandomState(seed)
    if low is None:
        return rng.randn(*shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def _two(shape_a, shape_b):
    return {"data": _x(shape_a), "rhs": _x(shape_b, seed=2)}


IMG = {"data": _x((2, 4, 7, 7))}
MAT = {"data": _x((3, 5))}
VOL = {"data": _x((2, 3, 4, 5))}
POS = {"data": _x((2, 3, 4), 0.2, 2.0)}

CASES = {
    # dense and convolution
    "fc_flatten": (lambda: S.FullyConnected(D, num_hidden=6, name="fc"), IMG),
    "fc_no_bias": (lambda: S.FullyConnected(D, num_hidden=6, no_bias=True), MAT),
    "fc_no_flatten": (lambda: S.FullyConnected(D, num_hidden=6, flatten=False), VOL),
    "conv1d": (lambda: S.Convolution(D, kernel=(3,), num_filter=5, stride=(2,), pad=(1,)),
               {"data": _x((2, 3, 9))}),
    "conv2d": (lambda: S.Convolution(D, kernel=(3, 3), num_filter=6, stride=(2, 1),
                                     pad=(1, 2), dilate=(1, 2), num_group=2), IMG),
    "conv2d_no_bias": (lambda: S.Convolution(D, kernel=(1, 1), num_filter=3, no_bias=True),
                       IMG),
    "conv3d": (lambda: S.Convolution(D, kernel=(2, 2, 2), num_filter=2),
               {"data": _x((1, 2, 4, 5, 3))}),
    "deconv": (lambda: S.Deconvolution(D, kernel=(3, 3), num_filter=3, stride=(2, 2),
                                       pad=(1, 1), adj=(1, 0), no_bias=False), IMG),
    "deconv_target": (lambda: S.Deconvolution(D, kernel=(4, 4), num_filter=2, stride=(2, 2),
                                              target_shape=(13, 14), num_group=2), IMG),
    # pooling
    "pool_max": (lambda: S.Pooling(D, kernel=(3, 3), stride=(2, 2), pool_type="max"), IMG),
    "pool_max_full": (lambda: S.Pooling(D, kernel=(2, 2), stride=(2, 2), pad=(1, 0),
                                        pooling_convention="full"), IMG),
    "pool_avg_pad": (lambda: S.Pooling(D, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                       pool_type="avg"), IMG),
    "pool_avg_nopad": (lambda: S.Pooling(D, kernel=(3, 3), pad=(1, 1), pool_type="avg",
                                         count_include_pad=False), IMG),
    "pool_avg_full": (lambda: S.Pooling(D, kernel=(3, 3), stride=(2, 2), pool_type="avg",
                                        pooling_convention="full"), {"data": _x((1, 2, 8, 8))}),
    "pool_sum": (lambda: S.Pooling(D, kernel=(2, 3), stride=(1, 2), pool_type="sum"), IMG),
    "pool_lp": (lambda: S.Pooling(D, kernel=(2, 2), stride=(2, 2), pool_type="lp",
                                  p_value=2), IMG),
    "pool_1d": (lambda: S.Pooling(D, kernel=(3,), stride=(2,), pool_type="avg"),
                {"data": _x((2, 3, 9))}),
    "pool_3d": (lambda: S.Pooling(D, kernel=(2, 2, 2), pool_type="max"),
                {"data": _x((1, 2, 4, 5, 3))}),
    "global_max": (lambda: S.Pooling(D, kernel=(1, 1), global_pool=True), IMG),
    "global_avg": (lambda: S.Pooling(D, kernel=(1, 1), global_pool=True, pool_type="avg"),
                   IMG),
    "global_sum": (lambda: S.Pooling(D, kernel=(1, 1), global_pool=True, pool_type="sum"),
                   IMG),
    "global_lp": (lambda: S.Pooling(D, kernel=(1, 1), global_pool=True, pool_type="lp",
                                    p_value=2), IMG),
    # normalization
    "bn_fix_gamma": (lambda: S.BatchNorm(D, name="bn"), IMG),
    "bn_gamma": (lambda: S.BatchNorm(D, fix_gamma=False, eps=1e-4), IMG),
    "bn_axis_last": (lambda: S.BatchNorm(D, axis=-1, fix_gamma=False), VOL),
    "bn_2d": (lambda: S.BatchNorm(D, fix_gamma=False), MAT),
    "instance_norm": (lambda: S.InstanceNorm(D, eps=1e-3), IMG),
    "layer_norm": (lambda: S.LayerNorm(D), VOL),
    "layer_norm_axis1": (lambda: S.LayerNorm(D, axis=1, eps=1e-3), VOL),
    "l2norm_instance": (lambda: S.L2Normalization(D), IMG),
    "l2norm_channel": (lambda: S.L2Normalization(D, mode="channel"), IMG),
    "l2norm_spatial": (lambda: S.L2Normalization(D, mode="spatial"), IMG),
    "lrn": (lambda: S.LRN(D, nsize=3, alpha=1e-2, beta=0.6, knorm=1.5), IMG),
    # activations
    "relu": (lambda: S.Activation(D, act_type="relu"), VOL),
    "sigmoid": (lambda: S.Activation(D, act_type="sigmoid"), VOL),
    "tanh": (lambda: S.Activation(D, act_type="tanh"), VOL),
    "softrelu": (lambda: S.Activation(D, act_type="softrelu"), VOL),
    "softsign": (lambda: S.Activation(D, act_type="softsign"), VOL),
    "leaky": (lambda: S.LeakyReLU(D, slope=0.1), VOL),
    "elu": (lambda: S.LeakyReLU(D, act_type="elu", slope=0.7), VOL),
    "selu": (lambda: S.LeakyReLU(D, act_type="selu"), VOL),
    "gelu": (lambda: S.LeakyReLU(D, act_type="gelu"), VOL),
    "rrelu": (lambda: S.LeakyReLU(D, act_type="rrelu"), VOL),
    "prelu": (lambda: S.LeakyReLU(D, act_type="prelu", name="pr"), IMG),
    "prelu_2d": (lambda: S.LeakyReLU(D, act_type="prelu"), MAT),
    "dropout": (lambda: S.Dropout(D, p=0.4) * 2, VOL),
    # softmax family and output heads
    "softmax_output": (lambda: S.SoftmaxOutput(D, name="softmax"), MAT),
    "softmax_output_4d": (lambda: S.SoftmaxOutput(D), IMG),
    "softmax_output_multi": (lambda: S.SoftmaxOutput(D, multi_output=True), IMG),
    "softmax_output_preserve": (lambda: S.SoftmaxOutput(D, preserve_shape=True), VOL),
    "softmax_activation": (lambda: S.SoftmaxActivation(D), IMG),
    "softmax_activation_channel": (lambda: S.SoftmaxActivation(D, mode="channel"), IMG),
    "softmax": (lambda: S.softmax(D, axis=1, temperature=2.0), VOL),
    "log_softmax": (lambda: S.log_softmax(D), VOL),
    "linear_regression": (lambda: S.LinearRegressionOutput(D), MAT),
    "mae_regression": (lambda: S.MAERegressionOutput(D), MAT),
    "logistic_regression": (lambda: S.LogisticRegressionOutput(D), MAT),
    "svm_output": (lambda: S.SVMOutput(D), MAT),
    "make_loss": (lambda: S.MakeLoss(S.square(D)), MAT),
    "block_grad": (lambda: S.BlockGrad(D) + D, MAT),
    "embedding": (lambda: S.Embedding(D, input_dim=6, output_dim=4),
                  {"data": np.array([[0, 5, 2], [7, -1, 3]], np.float32)}),
    "upsampling": (lambda: S.UpSampling(D, scale=2, sample_type="nearest"), IMG),
}

UNARY_DOMAIN = {"log": POS, "sqrt": POS, "rsqrt": POS, "log1p": POS, "log2": POS,
                "log10": POS, "reciprocal": POS, "arccosh": {"data": _x((2, 3, 4), 1.1, 3.0)},
                "arcsin": {"data": _x((2, 3, 4), -0.9, 0.9)},
                "arccos": {"data": _x((2, 3, 4), -0.9, 0.9)},
                "arctanh": {"data": _x((2, 3, 4), -0.9, 0.9)},
                "round": {"data": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.2, -0.7],
                                           np.float32)},
                "rint": {"data": np.array([-2.5, -1.5, -0.4, 0.5, 1.5, 2.6, -0.6], np.float32)}}
for _op in ["abs", "negative", "reciprocal", "exp", "log", "sqrt", "sin", "cos", "tan",
            "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
            "tanh", "sigmoid", "relu", "floor", "ceil", "sign", "erf", "softsign", "rint", "rsqrt",
            "square", "log1p", "expm1", "round", "fix", "trunc", "log2", "log10", "degrees",
            "radians", "hard_sigmoid", "logical_not", "identity"]:
    CASES["unary_" + _op] = ((lambda op=_op: getattr(S, op)(D)),
                             UNARY_DOMAIN.get(_op, {"data": np.round(_x((2, 3, 4)) * 2) / 2}))
for _op in ["elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "maximum",
            "minimum"]:
    CASES["binary_" + _op] = ((lambda op=_op: getattr(S, op)(D, D2)), _two((3, 4), (3, 4)))
CASES["binary_power"] = (lambda: S.broadcast_power(D, D2),
                         {"data": _x((3, 4), 0.5, 2), "rhs": _x((1, 4), -1, 2)})
for _op in ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
            "broadcast_maximum", "broadcast_minimum"]:
    CASES[_op] = ((lambda op=_op: getattr(S, op)(D, D2)), _two((3, 1, 4), (1, 5, 4)))
for _op in ["equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
            "logical_and", "logical_or", "logical_xor"]:
    _pair = {"data": np.array([[0, 1, 2], [3, 0, -1]], np.float32),
             "rhs": np.array([[0, 2, 2], [1, 0, 0]], np.float32)}
    CASES["broadcast_" + _op] = ((lambda op=_op: getattr(S, "broadcast_" + op)(D, D2)), _pair)
    CASES["scalar_" + _op] = ((lambda op=_op: getattr(S, "_%s_scalar" % op)(D, scalar=1.0)),
                              {"data": _pair["data"]})
    CASES["elemwise_" + _op] = ((lambda op=_op: getattr(S, "_" + op)(D, D2)), _pair)
CASES.update({
    "scalar_arith": (lambda: ((((D + 1) - 2) * 3) / 4) ** 2, MAT),
    "power": (lambda: S.abs(D) ** D2, _two((3, 4), (3, 4))),
    "scalar_reversed": (lambda: 5 - (2 / (3 ** S.abs(D) + 1)), MAT),
    "scalar_extrema": (lambda: S.maximum(S.minimum(D, 0.5), -0.5), MAT),
    "clip": (lambda: S.clip(D, -0.3, 0.6), VOL),
    "cast": (lambda: S.Cast(D * 10, dtype="int32"), MAT),
    "add_n": (lambda: S.add_n(D, D2, D * 2), _two((3, 4), (3, 4))),
    "where": (lambda: S.where(D > 0, D, D2), _two((3, 4), (3, 4))),
    "where_rows": (lambda: S.where(S.sum(D, axis=1) > 0, D, D2), _two((3, 4), (3, 4))),
    "zeros_ones_like": (lambda: S.zeros_like(D) + S.ones_like(D) * 3 + D, MAT),
    "constants": (lambda: D + S.zeros((3, 5)) + S.ones((3, 5)) + S.full((3, 5), 2.5), MAT),
    # shapes
    "flatten": (lambda: S.Flatten(D), VOL),
    "reshape_codes": (lambda: S.Reshape(D, shape=(0, -1)), VOL),
    "reshape_special": (lambda: S.Reshape(D, shape=(-3, -2)), VOL),
    "reshape_split": (lambda: S.Reshape(D, shape=(-4, 1, 2, -2)), VOL),
    "reshape_reverse": (lambda: S.Reshape(D, shape=(-1, 0), reverse=True), VOL),
    "transpose": (lambda: S.transpose(D, axes=(2, 0, 3, 1)), VOL),
    "transpose_default": (lambda: S.transpose(D), VOL),
    "swapaxes": (lambda: S.SwapAxis(D, dim1=1, dim2=3), VOL),
    "expand_dims": (lambda: S.expand_dims(D, axis=-1), MAT),
    "squeeze": (lambda: S.squeeze(D, axis=(0, 2)), {"data": _x((1, 3, 1, 2))}),
    "squeeze_all": (lambda: S.squeeze(D), {"data": _x((1, 3, 1, 2))}),
    "squeeze_ones": (lambda: S.squeeze(D), {"data": _x((1, 1))}),
    "concat": (lambda: S.Concat(D, D2, dim=1), _two((2, 3), (2, 4))),
    "stack": (lambda: S.stack(D, D2, axis=1), _two((2, 3), (2, 3))),
    "split": (lambda: S.SliceChannel(D, num_outputs=2, axis=2), VOL),
    "split_squeeze": (lambda: S.SliceChannel(D, num_outputs=3, axis=1, squeeze_axis=True),
                      VOL),
    "slice_axis": (lambda: S.slice_axis(D, axis=1, begin=-2, end=None), VOL),
    "slice": (lambda: S.slice(D, begin=(None, 1, 0), end=(None, 3, 4), step=(1, 1, 2)), VOL),
    "slice_negative_step": (lambda: S.slice(D, begin=(1, None), end=(None, 0),
                                            step=(-1, -2)), MAT),
    "reverse": (lambda: S.reverse(D, axis=(0, 2)), VOL),
    "pad_constant": (lambda: S.Pad(D, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                                   constant_value=0.5), IMG),
    "pad_edge": (lambda: S.Pad(D, mode="edge", pad_width=(0, 0, 0, 0, 1, 2, 2, 1)), IMG),
    "pad_reflect": (lambda: S.Pad(D, mode="reflect", pad_width=(0, 0, 0, 0, 2, 1, 1, 2)),
                    IMG),
    "tile": (lambda: S.tile(D, reps=(2, 3)), VOL),
    "tile_lift": (lambda: S.tile(D, reps=(2, 1, 3)), MAT),
    "broadcast_to": (lambda: S.broadcast_to(D, shape=(0, 4, 5)), {"data": _x((3, 1, 5))}),
    "broadcast_axis": (lambda: S.broadcast_axis(D, axis=1, size=4), {"data": _x((3, 1, 5))}),
    "broadcast_like": (lambda: S.broadcast_like(D, D2), _two((3, 1), (3, 4))),
    "sum_axis": (lambda: S.sum(D, axis=(1, 3)), VOL),
    "sum_all": (lambda: S.sum(D), VOL),
    "mean_keepdims": (lambda: S.mean(D, axis=1, keepdims=True), VOL),
    "max_exclude": (lambda: S.max(D, axis=1, exclude=True), VOL),
    "min_neg_axis": (lambda: S.min(D, axis=-1), VOL),
    "prod": (lambda: S.prod(D, axis=0), POS),
    "norm_l2": (lambda: S.norm(D, axis=1), VOL),
    "norm_l1": (lambda: S.norm(D, ord=1, axis=(1, 2), keepdims=True), VOL),
    "norm_all": (lambda: S.norm(D), VOL),
    "argmax": (lambda: S.argmax(D, axis=1), VOL),
    "argmin_keepdims": (lambda: S.argmin(D, axis=2, keepdims=True), VOL),
    "argmax_all": (lambda: S.argmax(D), MAT),
    "take": (lambda: S.take(D, D2, axis=1),
             {"data": _x((3, 5)), "rhs": np.array([[0, 4], [9, -2]], np.float32)}),
    "dot": (lambda: S.dot(D, D2), _two((3, 4), (4, 5))),
    "dot_transposed": (lambda: S.dot(D, D2, transpose_a=True, transpose_b=True),
                       _two((4, 3), (5, 4))),
    "dot_nd": (lambda: S.dot(D, D2), _two((2, 3, 4), (4, 5))),
    "dot_vectors": (lambda: S.dot(D, D2), _two((4,), (4,))),
    "batch_dot": (lambda: S.batch_dot(D, D2), _two((2, 3, 4), (2, 4, 5))),
    "batch_dot_transposed": (lambda: S.batch_dot(D, D2, transpose_a=True, transpose_b=True),
                             _two((2, 4, 3), (2, 5, 4))),
    "shape_size": (lambda: S.Group([S.shape_array(D), S.size_array(D)]), VOL),
    "depth_to_space": (lambda: S.depth_to_space(D, block_size=2), {"data": _x((1, 8, 2, 3))}),
    "space_to_depth": (lambda: S.space_to_depth(D, block_size=2), {"data": _x((1, 2, 4, 6))}),
})

SEQ = {"data": _x((5, 3, 2)), "rhs": np.array([2, 5, 1], np.float32)}
SEQ_NT = {"data": _x((3, 5, 2)), "rhs": np.array([2, 5, 1], np.float32)}
DISTINCT = {"data": np.random.RandomState(5).permutation(24).reshape(2, 3, 4)
            .astype(np.float32)}
CASES.update({
    "group_norm": (lambda: S.GroupNorm(D, num_groups=2), IMG),
    "moments": (lambda: S.Group(list(S.moments(D, axes=(1, 2)))), VOL),
    "moments_keepdims": (lambda: S.Group(list(S.moments(D, axes=(0,), keepdims=True))), VOL),
    "softmin": (lambda: S.softmin(D, axis=1), VOL),
    "smooth_l1": (lambda: S.smooth_l1(D, scalar=2.0), VOL),
    "creation": (lambda: S.broadcast_add(D, S.arange(0, 5)) + S.eye(3, 5, k=1)
                 + S.broadcast_add(D, S.linspace(0, 1, 5)), MAT),
    "argmax_channel": (lambda: S.argmax_channel(D), MAT),
    "pick": (lambda: S.pick(D, D2, axis=1),
             {"data": _x((3, 5)), "rhs": np.array([0, 7, -1], np.float32)}),
    "pick_wrap_keepdims": (lambda: S.pick(D, D2, axis=0, mode="wrap", keepdims=True),
                           {"data": _x((3, 5)),
                            "rhs": np.array([0, 4, -1, 2, 3], np.float32)}),
    "gather_nd": (lambda: S.gather_nd(D, D2),
                  {"data": _x((3, 4, 5)),
                   "rhs": np.array([[0, 2, 1, 2, 0, 1], [3, 0, 1, 2, 3, 3]], np.float32)}),
    "one_hot": (lambda: S.one_hot(D, depth=4, on_value=2.0, off_value=-1.0),
                {"data": np.array([[0, 3, 5], [-1, 1, 2]], np.float32)}),
    "topk_indices": (lambda: S.topk(D, axis=1, k=2), DISTINCT),
    "topk_both_ascending": (lambda: S.Group(list(S.topk(D, axis=-1, k=3, ret_typ="both",
                                                        is_ascend=True))), DISTINCT),
    "topk_value": (lambda: S.topk(D, axis=0, k=2, ret_typ="value"), DISTINCT),
    "sort_descending": (lambda: S.sort(D, axis=1, is_ascend=False), DISTINCT),
    "argsort": (lambda: S.argsort(D), DISTINCT),
    "sequence_mask": (lambda: S.SequenceMask(D, D2, use_sequence_length=True, value=-1.0),
                      SEQ),
    "sequence_mask_axis1": (lambda: S.SequenceMask(D, D2, use_sequence_length=True, axis=1),
                            SEQ_NT),
    "sequence_mask_off": (lambda: S.SequenceMask(D), {"data": SEQ["data"]}),
    "sequence_last": (lambda: S.SequenceLast(D, D2, use_sequence_length=True), SEQ),
    "sequence_last_axis1": (lambda: S.SequenceLast(D, D2, use_sequence_length=True, axis=1),
                            SEQ_NT),
    "sequence_last_plain": (lambda: S.SequenceLast(D), {"data": SEQ["data"]}),
    "sequence_reverse": (lambda: S.SequenceReverse(D, D2, use_sequence_length=True), SEQ),
    "sequence_reverse_plain": (lambda: S.SequenceReverse(D), {"data": SEQ["data"]}),
    "repeat": (lambda: S.repeat(D, repeats=2, axis=1), VOL),
    "repeat_flat": (lambda: S.repeat(D, repeats=3), MAT),
    "crop_center": (lambda: S.Crop(D, h_w=(4, 5), center_crop=True, num_args=1), IMG),
    "crop_like": (lambda: S.Crop(D, D2, offset=(1, 2), num_args=2),
                  {"data": _x((2, 4, 7, 7)), "rhs": _x((1, 1, 3, 4))}),
    "slice_like": (lambda: S.slice_like(D, D2, axes=(1,)), _two((2, 3, 4, 5), (2, 2, 4, 5))),
    "reshape_like": (lambda: S.reshape_like(D, D2), _two((3, 4), (2, 6))),
    "reshape_like_ranges": (lambda: S.reshape_like(D, D2, lhs_begin=0, lhs_end=2,
                                                   rhs_begin=0, rhs_end=1),
                            _two((2, 3, 4), (6, 9))),
})


def _rnn_case(mode, layers, bidirectional, state_outputs, steps=5, batch=3, size=4, hidden=6,
              lengths=None):
    dirs = 2 if bidirectional else 1

    def build():
        states = [S.var("state")] + ([S.var("state_cell")] if mode == "lstm" else [])
        extra = {} if lengths is None else dict(use_sequence_length=True,
                                                sequence_length=S.var("lengths"))
        return S.RNN(D, S.var("parameters"), *states, state_size=hidden, num_layers=layers,
                     mode=mode, bidirectional=bidirectional, state_outputs=state_outputs,
                     p=0.3 if layers > 1 else 0.0, name="rnn", **extra)

    inputs = {"data": _x((steps, batch, size)), "state": _x((layers * dirs, batch, hidden),
                                                            seed=3)}
    if mode == "lstm":
        inputs["state_cell"] = _x((layers * dirs, batch, hidden), seed=4)
    if lengths is not None:
        inputs["lengths"] = np.array(lengths, np.float32)
    return build, inputs


CASES.update({
    "rnn_lstm": _rnn_case("lstm", 1, False, False),
    "rnn_lstm_deep_bidirectional": _rnn_case("lstm", 2, True, True),
    "rnn_gru_deep": _rnn_case("gru", 2, False, True),
    "rnn_gru_bidirectional": _rnn_case("gru", 1, True, True),
    "rnn_tanh": _rnn_case("rnn_tanh", 1, False, True),
    "rnn_relu_deep_bidirectional": _rnn_case("rnn_relu", 3, True, False),
    "rnn_lstm_lengths": _rnn_case("lstm", 2, True, True, lengths=[5, 2, 4]),
    "rnn_gru_lengths": _rnn_case("gru", 1, True, True, lengths=[3, 5, 1]),
})


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_matches_forward(case, tmp_path):
    build, inputs = CASES[case]
    sym = build()
    params = random_params(sym, inputs)
    want = minimod_forward(sym, inputs, params)
    got = export_and_run(sym, inputs, params, str(tmp_path / "m.onnx"))
    assert len(got) == len(want)
    for w, g in zip(want, got):
        assert g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-5,
                                   atol=2e-5)


def test_every_converter_has_a_case():
    built = set()
    for build, _ in CASES.values():
        for node in build()._graph.nodes:
            if node.op is not None:
                built.add(node.op.name)
    untested = set(get_operator_support()) - built - {"amp_cast", "_copy"}
    assert not untested, "converters without a case: %s" % sorted(untested)
