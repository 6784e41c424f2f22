"""Scenarios of MXNet's two shape semantics, run alike by MXNet 1.9.1 (gen_np_shape_golden.py)
and by minimod (tests/test_np_shape.py). Each takes the `mx` module and returns plain data
(lists, numbers, strings) so that the two runs compare with ==; a refusal is the string
"raises".
"""
import json

import numpy as np


def _shapes(triple):
    """infer_shape's (args, outs, aux) as lists (None stays None)."""
    return [None if group is None else [None if s is None else list(s) for s in group]
            for group in triple]


def _attempt(fn):
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - MXNet raises MXNetError, minimod a subclass
        if type(err).__name__ in ("MXNetError",) or isinstance(err, (ValueError, RuntimeError)):
            return "raises"
        raise


def _partial(mx, build, **shapes):
    return _shapes(build(mx).infer_shape_partial(**shapes))


def _dot(mx):
    return mx.sym.dot(mx.sym.var("x"), mx.sym.var("y"))


def _batch_dot(mx):
    return mx.sym.batch_dot(mx.sym.var("x"), mx.sym.var("y"))


def _fc(mx):
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")


def _declared(mx):
    return mx.sym.sin(mx.sym.var("data", shape=(-1, 20)) + mx.sym.var("b", shape=(0, 20)))


def infer(mx, np_shape: bool):
    """Partial and full shape inference, with unknown dims spelt each semantics' way."""
    u = -1 if np_shape else 0
    with mx.np_shape(np_shape):
        return {
            "dot": _partial(mx, _dot, x=(u, 3, 4), y=(4, 5)),
            "batch_dot_unknown_k": _partial(mx, _batch_dot, x=(u, 3, 4), y=(u, u, 5)),
            "fc_batch_unknown": _partial(mx, _fc, data=(u, 7)),
            "fc_zero_batch": _partial(mx, _fc, data=(0, 7)),
            "nothing_known": _partial(mx, lambda m: m.sym.sin(m.sym.var("data"))),
            "scalar_given": _partial(mx, lambda m: m.sym.sin(m.sym.var("data")), data=()),
            "declared": _partial(mx, _declared),
            "slice": _partial(mx, lambda m: m.sym.slice(m.sym.var("data", shape=(u, 20)),
                                                        begin=(None, 3), end=(None, 10))),
            "full_unknown": _shapes(mx.sym.sin(mx.sym.var("data")).infer_shape(
                data=(u, 3))),
            "full_zero": _shapes(mx.sym.sin(mx.sym.var("data")).infer_shape(data=(0, 3))),
        }


def json_attrs(mx):
    """The graph attributes `tojson` writes, and how a legacy file's declared shape reads."""
    net = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("weight", shape=(4, 0)),
                                num_hidden=4, name="fc")
    legacy_text = net.tojson()
    with mx.np_shape(True):
        np_text = net.tojson()
        reloaded = mx.sym.load_json(legacy_text)
        reloaded_shape = json.loads(reloaded.tojson())["nodes"][1]["attrs"]["__shape__"]
        np_infer = _shapes(reloaded.infer_shape(data=(2, 3)))
    with mx.np_shape(False):
        back = mx.sym.load_json(np_text)
        legacy_infer = _shapes(back.infer_shape(data=(2, 3)))
    return {"legacy_attrs": json.loads(legacy_text)["attrs"],
            "np_attrs": json.loads(np_text)["attrs"],
            "np_text_tail": np_text[np_text.index('"heads"'):],
            "reloaded_shape": reloaded_shape, "np_infer": np_infer,
            "legacy_infer": legacy_infer}


def _values(array):
    return {"shape": list(array.shape), "values": array.asnumpy().ravel().tolist()}


def imperative(mx):
    """Zero-size and 0-d arrays through creation, indexing and a few operators."""
    out = {}
    with mx.np_shape(False):
        out["legacy_zeros_zero_size"] = _attempt(lambda: _values(mx.nd.zeros((5, 0))))
        out["legacy_ones_scalar"] = _attempt(lambda: _values(mx.nd.ones(())))
        out["legacy_full_zero_size"] = _attempt(lambda: _values(mx.nd.full((2, 0), 3)))
        out["legacy_array_zero_size"] = _attempt(lambda: _values(mx.nd.array(np.zeros((2, 0)))))
        out["legacy_index_1d"] = _values(mx.nd.arange(4)[2])
        out["legacy_index_all"] = _values(mx.nd.arange(12).reshape((4, 3))[1, 2])
        out["legacy_relu_zero_size"] = _attempt(
            lambda: _values(mx.nd.relu(mx.nd.array(np.zeros((2, 0))))))
    with mx.np_shape(True):
        out["np_zeros_zero_size"] = _values(mx.nd.zeros((5, 0)))
        out["np_ones_scalar"] = _values(mx.nd.ones(()))
        out["np_index_1d"] = _values(mx.nd.arange(4)[2])
        out["np_index_all"] = _values(mx.nd.arange(12).reshape((4, 3))[1, 2])
        out["np_min_zero_size"] = _attempt(lambda: _values(mx.nd.zeros((5, 0)).min()))
        out["np_concat"] = _values(mx.nd.Concat(mx.nd.ones((0, 3)), mx.nd.ones((2, 3)) * 2,
                                                mx.nd.ones((0, 3)), dim=0))
        out["np_concat_axis1"] = _values(mx.nd.Concat(mx.nd.ones((0, 3)), mx.nd.ones((0, 4)),
                                                      dim=1))
        out["np_tile"] = _values(mx.nd.tile(mx.nd.zeros((2, 0, 3)), reps=(2, 2)))
        out["np_one_hot"] = _values(mx.nd.one_hot(mx.nd.zeros((2, 0)), depth=4))
        out["np_fc"] = _values(mx.nd.FullyConnected(
            mx.nd.zeros((0, 5)), mx.nd.ones((3, 5)), mx.nd.ones((3,)), num_hidden=3))
        out["np_relu_scalar"] = _values(mx.nd.relu(mx.nd.array(np.array(-2.0))))
        out["np_add_scalar"] = _values(mx.nd.ones(()) + mx.nd.array([1.0, 2.0]))
        out["np_index_array"] = _values(mx.nd.contrib.index_array(mx.nd.ones(())))
        out["np_boolean_mask"] = _values(mx.nd.contrib.boolean_mask(
            mx.nd.arange(6).reshape((2, 3)), mx.nd.zeros((2,))))
    return out


def bound(mx):
    """A bound graph under NumPy shapes: a zero-size batch and a 0-d input."""
    out = {}
    with mx.np_shape(True):
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
        exe = net.simple_bind(mx.cpu(), data=(0, 4))
        exe.arg_dict["fc_weight"][:] = 1
        exe.forward(is_train=True)
        exe.backward([mx.nd.zeros((0, 3))])
        out["fc_out"] = _values(exe.outputs[0])
        # (no weight gradient here: MXNet 1.9.1 leaves it unallocated for a zero-size batch,
        # "Check failed: delay_alloc"; tests/test_np_shape.py checks minimod's zeros)
        scalar = mx.sym.broadcast_mul(mx.sym.var("s"), mx.sym.var("v"))
        exe = scalar.bind(mx.cpu(), {"s": mx.nd.array(np.array(3.0)),
                                     "v": mx.nd.array([1.0, 2.0])},
                          args_grad={"s": mx.nd.zeros(()), "v": mx.nd.zeros((2,))})
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((2,))])
        out["scalar_out"] = _values(exe.outputs[0])
        out["scalar_grad"] = _values(exe.grad_dict["s"])
    return out


def saved(mx, path):
    """Files `mx.nd.save` writes under each semantics, and which semantics load them."""
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 3), np.float32)]
    result = {}
    for mode in (False, True):
        with mx.np_shape(mode):
            data = [mx.nd.array(a) for a in arrays]
            if mode:
                data.append(mx.nd.array(np.array(5.0, dtype=np.float32)))
            mx.nd.save("%s.%s" % (path, "np" if mode else "legacy"), data)
    for mode in (False, True):
        for kind in ("legacy", "np"):
            with mx.np_shape(mode):
                result["%s_loaded_%s" % (kind, "np" if mode else "legacy")] = _attempt(
                    lambda: [_values(a) for a in mx.nd.load("%s.%s" % (path, kind))])
    return result


def zero_batch(mx):
    """Output shapes of layers and routines given a batch of 0 samples (NumPy shapes)."""
    def z(*shape):
        return mx.nd.zeros(shape)

    def o(*shape):
        return mx.nd.ones(shape)

    cases = {
        "Convolution": lambda: mx.nd.Convolution(
            z(0, 3, 8, 8), o(4, 3, 3, 3), o(4), kernel=(3, 3), num_filter=4),
        "Deconvolution": lambda: mx.nd.Deconvolution(
            z(0, 3, 8, 8), o(3, 4, 3, 3), kernel=(3, 3), num_filter=4, no_bias=True),
        "Pooling": lambda: mx.nd.Pooling(
            z(0, 3, 8, 8), kernel=(2, 2), stride=(2, 2), pool_type='max'),
        "Pooling_global": lambda: mx.nd.Pooling(
            z(0, 3, 8, 8), kernel=(2, 2), global_pool=True, pool_type='avg'),
        "BatchNorm": lambda: mx.nd.BatchNorm(z(0, 3, 4, 4), o(3), z(3), z(3), o(3)),
        "LayerNorm": lambda: mx.nd.LayerNorm(z(0, 5), o(5), z(5)),
        "Activation": lambda: mx.nd.Activation(z(0, 5), act_type='relu'),
        "LeakyReLU": lambda: mx.nd.LeakyReLU(z(0, 5), act_type='leaky'),
        "softmax": lambda: mx.nd.softmax(z(0, 5)),
        "log_softmax": lambda: mx.nd.log_softmax(z(0, 5)),
        "SoftmaxOutput": lambda: mx.nd.SoftmaxOutput(z(0, 5), z(0)),
        "Embedding": lambda: mx.nd.Embedding(z(0, 4), o(10, 3), input_dim=10, output_dim=3),
        "Dropout": lambda: mx.nd.Dropout(z(0, 5), p=0.5),
        "Reshape": lambda: mx.nd.Reshape(z(0, 6), shape=(0, 2, 3)),
        "transpose": lambda: mx.nd.transpose(z(0, 2, 3)),
        "Flatten": lambda: mx.nd.Flatten(z(0, 2, 3)),
        "sum_axis1": lambda: mx.nd.sum(z(0, 5), axis=1),
        "mean_axis1": lambda: mx.nd.mean(z(0, 5), axis=1),
        "argmax_axis1": lambda: mx.nd.argmax(z(0, 5), axis=1),
        "slice_axis": lambda: mx.nd.slice_axis(z(0, 5), axis=1, begin=1, end=3),
        "take": lambda: mx.nd.take(o(5, 3), z(0)),
        "pick": lambda: mx.nd.pick(z(0, 5), z(0), axis=1),
        "one_hot": lambda: mx.nd.one_hot(z(0), 4),
        "broadcast_add": lambda: mx.nd.broadcast_add(z(0, 5), o(1, 5)),
        "elemwise_add": lambda: z(0, 5) + z(0, 5),
        "dot": lambda: mx.nd.dot(z(0, 5), o(5, 3)),
        "batch_dot": lambda: mx.nd.batch_dot(z(0, 2, 5), o(0, 5, 3)),
        "SliceChannel": lambda: mx.nd.SliceChannel(z(0, 4), num_outputs=2),
        "stack": lambda: mx.nd.stack(z(0, 3), z(0, 3)),
        "expand_dims": lambda: mx.nd.expand_dims(z(0, 3), axis=1),
        "clip": lambda: mx.nd.clip(z(0, 3), 0, 1),
        "cast": lambda: mx.nd.Cast(z(0, 3), dtype='int32'),
        "topk": lambda: mx.nd.topk(z(0, 5), k=2),
        "sort": lambda: mx.nd.sort(z(0, 5)),
        "LinearRegressionOutput": lambda: mx.nd.LinearRegressionOutput(z(0, 3), z(0, 3)),
        "L2Normalization": lambda: mx.nd.L2Normalization(z(0, 3)),
        "RNN_lstm": lambda: mx.nd.RNN(
            z(4, 0, 3), o(4 * 2 * (3 + 2) + 2 * 4 * 2), z(1, 0, 2), z(1, 0, 2), state_size=2,
            num_layers=1, mode="lstm"),
        "SequenceMask": lambda: mx.nd.SequenceMask(z(3, 0, 2)),
        "where": lambda: mx.nd.where(z(0, 3), z(0, 3), z(0, 3)),
        "repeat": lambda: mx.nd.repeat(z(0, 3), repeats=2, axis=1),
        "tile": lambda: mx.nd.tile(z(0, 3), reps=(2, 1)),
        "pad": lambda: mx.nd.pad(
            z(0, 1, 3, 3), mode='constant', pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
        "UpSampling": lambda: mx.nd.UpSampling(z(0, 2, 3, 3), scale=2, sample_type='nearest'),
        "smooth_l1": lambda: mx.nd.smooth_l1(z(0, 3), scalar=1.0),
        "norm_axis": lambda: mx.nd.norm(z(0, 3), axis=1),
        "squeeze": lambda: mx.nd.squeeze(z(0, 1, 3), axis=1),
        "swapaxes": lambda: mx.nd.swapaxes(z(0, 3), 0, 1),
        "gather_nd": lambda: mx.nd.gather_nd(o(3, 3), z(2, 0)),
        "reverse": lambda: mx.nd.reverse(z(0, 3), axis=0),
    }
    result = {}
    with mx.np_shape(True):
        for name, make in cases.items():
            outs = make()
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            result[name] = [list(a.shape) for a in outs]
    return result
