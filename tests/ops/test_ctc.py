"""CTCLoss (minimod/ops/ctc.py): a per-sequence dynamic-programming reference in probability
space (float64) with float64 finite-difference gradients on every backend (the `ctx` fixture),
MXNet 1.9.1's losses and gradients through a bound executor (tests/data/ops/
ctc_legacy_golden.npz), MXNet's own conventions (padding, lengths, infeasible labels), the
names and slots MXNet gives the op, and errors."""
import json
import os

import numpy as np
import pytest

import minimod as mx
from minimod.base import ShapeError
from minimod.ops.registry import create_op

from .harness import Case, check_case, infer, run_backward, run_forward

_RS = np.random.RandomState(5)
GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "ops",
                              "ctc_legacy_golden.npz"))


def r(*shape):
    return _RS.randn(*shape)


def f32(values):
    return np.array(values, dtype="float32")


# ----------------------------------------------------------------------------- reference

def ctc_reference(data, label, data_len=None, label_len=None, blank_label="first"):
    """(loss, gradient) one sequence at a time, forward and backward variables as
    probabilities (not logs) in float64, loops over every time step and position."""
    steps, batch, classes = data.shape
    blank, pad = (0, 0) if blank_label == "first" else (classes - 1, -1)
    x = data.astype(np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    loss, grad = np.zeros(batch), np.zeros_like(x)
    for n in range(batch):
        t_n = steps if data_len is None else int(data_len[n])
        row = [int(v) for v in label[n]]
        l_n = (row.index(pad) if pad in row else len(row)) if label_len is None \
            else int(label_len[n])
        ext = [blank]
        for c in row[:l_n]:
            ext += [c, blank]
        span = len(ext)
        alpha, beta = np.zeros((t_n, span)), np.zeros((t_n, span))
        alpha[0, :2] = p[0, n, ext[:2]]
        for t in range(1, t_n):
            for s in range(span):
                total = alpha[t - 1, s] + (alpha[t - 1, s - 1] if s else 0)
                if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                    total += alpha[t - 1, s - 2]
                alpha[t, s] = total * p[t, n, ext[s]]
        beta[t_n - 1, -2:] = p[t_n - 1, n, ext[-2:]]
        for t in range(t_n - 2, -1, -1):
            for s in range(span):
                total = beta[t + 1, s] + (beta[t + 1, s + 1] if s + 1 < span else 0)
                if s + 2 < span and ext[s] != blank and ext[s] != ext[s + 2]:
                    total += beta[t + 1, s + 2]
                beta[t, s] = total * p[t, n, ext[s]]
        likelihood = alpha[-1, -1] + (alpha[-1, -2] if span > 1 else 0)
        if likelihood == 0:  # no alignment fits: MXNet's loss 0, gradient 0
            continue
        loss[n] = -np.log(likelihood)
        for t in range(t_n):
            occupancy = np.zeros(classes)
            for s in range(span):
                occupancy[ext[s]] += alpha[t, s] * beta[t, s] / p[t, n, ext[s]]
            grad[t, n] = p[t, n] - occupancy / likelihood
    return loss, grad


def ref(blank_label="first", use_data=False, use_label=False):
    def loss(data, label, *lengths):
        lengths = list(lengths)
        data_len = lengths.pop(0) if use_data else None
        label_len = lengths.pop(0) if use_label else None
        return [ctc_reference(data, label, data_len, label_len, blank_label)[0]]
    return loss


LABELS = f32([[1, 2, 2, 0], [3, 0, 0, 0], [1, 2, 3, 4]])
CASES = [
    Case("CTCLoss", {}, [r(6, 3, 5), LABELS], ref(), infer_from=[0, 1], grad_wrt=[0],
         id="first"),
    Case("ctc_loss", dict(blank_label="last"),
         [r(6, 3, 5), f32([[0, 1, 1, -1], [2, -1, -1, -1], [0, 1, 2, 3]])], ref("last"),
         grad_wrt=[0], id="last"),
    Case("CTCLoss", dict(use_data_lengths=True, use_label_lengths=True),
         [r(7, 3, 6), f32([[1, 2, 2, 5], [3, 4, 1, 1], [1, 5, 3, 4]]), f32([7, 4, 6]),
          f32([3, 1, 2])], ref(use_data=True, use_label=True), infer_from=[0, 1],
         grad_wrt=[0], id="both_lengths"),
    Case("_contrib_CTCLoss", dict(use_data_lengths=True),
         [r(8, 2, 4), f32([[1, 2, 1], [3, 3, 0]]), f32([5, 8])], ref(use_data=True),
         grad_wrt=[0], id="data_lengths"),
    Case("_contrib_ctc_loss", dict(use_label_lengths=True, blank_label="last"),
         [r(5, 2, 4), f32([[1, 0, 2], [2, 2, 2]]), f32([3, 2])], ref("last", use_label=True),
         grad_wrt=[0], id="label_lengths"),
    Case("CTCLoss", dict(use_label_lengths=True), [r(5, 2, 4), f32([[1, 0, 2], [3, 3, 3]]),
                                                   f32([3, 2])], ref(use_label=True),
         grad_wrt=[0], id="blank_valued_label"),
    Case("CTCLoss", {}, [r(4, 2, 5), np.array([[2, 3], [4, 0]], dtype="int32")], ref(),
         grad_wrt=[0], id="int_labels"),
    Case("CTCLoss", {}, [r(3, 2, 5), f32([[1, 1, 1], [1, 2, 3]])], ref(), grad_wrt=[0],
         id="infeasible"),
    Case("CTCLoss", {}, [r(4, 2, 3), f32([[0, 0], [1, 0]])], ref(), grad_wrt=[0],
         id="empty_label"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_case(case, ctx):
    check_case(case, ctx)


def test_backward_multiplies_the_head_gradient():
    op = create_op("CTCLoss")
    data, label = r(5, 3, 4), f32([[1, 2], [3, 3], [2, 0]])
    args, aux, outs = run_forward(op, [data, label])
    head = np.array([2.0, -1.0, 0.5])
    grads = run_backward(op, args, aux, outs, [head, None], [0])
    want = ctc_reference(data, label)[1] * head[None, :, None]
    np.testing.assert_allclose(grads[0], want, rtol=1e-6, atol=1e-8)


def test_steps_past_a_sequence_are_ignored_even_when_nan():
    data = r(7, 2, 5)
    data[5:] = np.nan
    label, lengths = f32([[1, 2, 0], [3, 4, 4]]), f32([5, 5])
    op = create_op("CTCLoss", dict(use_data_lengths=True))
    args, aux, outs = run_forward(op, [data, label, lengths])
    grads = run_backward(op, args, aux, outs, [np.ones(2), None], [0])
    loss, grad = ctc_reference(data[:5], label)
    np.testing.assert_allclose(outs[0], loss, rtol=1e-6)
    np.testing.assert_allclose(grads[0][:5], grad, rtol=1e-5, atol=1e-7)
    assert (grads[0][5:] == 0).all()


def test_mxnet_conventions_for_zero_steps_and_impossible_labels():
    op = create_op("CTCLoss", dict(use_data_lengths=True, use_label_lengths=True))
    data = r(4, 3, 5).astype("float32")
    label = f32([[1, 1, 0], [2, 3, 0], [1, 1, 0]])
    args, aux, outs = run_forward(op, [data, label, f32([0, 4, 2]), f32([1, 2, 2])])
    grads = run_backward(op, args, aux, outs, [np.ones(3, "float32"), None], [0])
    assert outs[0][0] == np.inf and outs[0][2] == 0 and np.isfinite(outs[0][1])
    assert (grads[0][:, 0] == 0).all() and (grads[0][:, 2] == 0).all()


def test_inference_forward_gives_the_same_loss():
    op = create_op("CTCLoss")
    inputs = [r(6, 3, 5), LABELS]
    train = run_forward(op, inputs, is_train=True)[2][0]
    np.testing.assert_array_equal(run_forward(op, inputs, is_train=False)[2][0], train)


# ----------------------------------------------------------------------------- MXNet's numbers

CTC_GOLDEN = sorted(k.split("/")[0] for k in GOLDEN.files
                    if k.startswith("ctc_") and k.endswith("/meta"))


@pytest.mark.parametrize("name", CTC_GOLDEN)
def test_bound_executor_matches_mxnet(name):
    meta = json.loads(str(GOLDEN[name + "/meta"]))
    inputs = [GOLDEN["%s/in%d" % (name, i)] for i in range(meta["n_in"])]
    slots = create_op(meta["op"], meta["attrs"]).arguments()
    out = mx.sym.CTCLoss(name="ctc", **{s: mx.sym.var(s) for s in slots}, **meta["attrs"])
    grad_req = {s: ("write" if i in meta["wrt"] else "null") for i, s in enumerate(slots)}
    exe = out.simple_bind(mx.cpu(), grad_req=grad_req,
                          type_dict={s: a.dtype for s, a in zip(slots, inputs)},
                          **{s: a.shape for s, a in zip(slots, inputs)})
    for s, a in zip(slots, inputs):
        exe.arg_dict[s][:] = a
    outs = exe.forward(is_train=meta["train"])
    np.testing.assert_allclose(outs[0].asnumpy(), GOLDEN[name + "/out0"], rtol=1e-5,
                               atol=1e-5)
    if meta["wrt"]:
        exe.backward([mx.nd.array(GOLDEN[name + "/head"])])
        np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), GOLDEN[name + "/grad0"],
                                   rtol=1e-4, atol=1e-6)


def test_large_alphabet_as_mxnet():
    """6000 classes, 8 steps (MXNet's numbers), through mx.nd."""
    rows = [np.roll(np.arange(6000, dtype=np.float32), i) / 13 for i in range(16)]
    data = np.stack(rows, axis=1).reshape(8, 2, 6000)
    label = np.array([[100, 200, 300, 400, 500, 0, 0, 0],
                      [1000, 2000, 3000, 4000, 0, 5000, 0, 0]], dtype=np.int32)
    loss = mx.nd.ctc_loss(mx.nd.array(data), mx.nd.array(label))
    np.testing.assert_allclose(loss.asnumpy(), [688.02826, 145.34462], rtol=1e-5)


# ----------------------------------------------------------------------------- slots, names

def test_names_slots_and_json_as_mxnet():
    data, label = mx.sym.var("data"), mx.sym.var("label")
    for build in (mx.sym.CTCLoss, mx.sym.ctc_loss, mx.sym.contrib.ctc_loss,
                  mx.sym.contrib.CTCLoss):
        out = build(data, label, name="c")
        assert json.loads(out.tojson())["nodes"][-1]["op"] == "CTCLoss"
        assert out.list_outputs() == ["c_output0"]
    both = mx.sym.CTCLoss(data, label, mx.sym.var("dl"), mx.sym.var("ll"),
                          use_data_lengths=True, use_label_lengths=True)
    assert both.list_arguments() == ["data", "label", "dl", "ll"]
    only_label = mx.sym.CTCLoss(data, label, label_lengths=mx.sym.var("ll"),
                                use_label_lengths=True)
    assert only_label.list_arguments() == ["data", "label", "ll"]
    arg, out, _ = only_label.infer_shape(data=(5, 2, 6), label=(2, 3))
    assert arg == [(5, 2, 6), (2, 3), (2,)] and out == [(2,)]
    arg_t, out_t, _ = only_label.infer_type(data=np.float64, label=np.int32, ll=np.int64)
    assert out_t == [np.float64] and arg_t == [np.float64, np.int32, np.int64]


def test_shape_inference_runs_both_ways():
    op = create_op("CTCLoss", dict(use_data_lengths=True))
    in_shapes, out_shapes = infer(op, [None, (4, 3), None])
    assert in_shapes == [None, (4, 3), (4,)] and out_shapes[0] == (4,)
    in_shapes, out_shapes = infer(op, [(6, None, 5), (4, 3), None])
    assert in_shapes[0] == (6, 4, 5) and out_shapes[1] == (6, 4, 5)


@pytest.mark.parametrize("shapes, match", [
    ([(5, 2), (2, 3)], "must be 3-D"),
    ([(5, 2, 4), (2, 3, 1)], "must be 2-D"),
    ([(5, 2, 4), (3, 3)], "batch sizes differ"),
    ([(3, 2, 4), (2, 5)], "only 3 time steps"),
])
def test_bad_shapes_are_refused(shapes, match):
    with pytest.raises(ShapeError, match=match):
        infer(create_op("CTCLoss"), shapes)
