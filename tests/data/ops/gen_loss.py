"""Write loss_golden.npz: forward outputs and gradients of MXNet 1.9.1's loss heads.

Run under a venv with MXNet 1.9.1 (not a minimod dependency):
    OMP_NUM_THREADS=1 /path/to/mxnet-venv/bin/python tests/data/ops/gen_loss.py
Each case stores `<id>/data`, `<id>/label`, `<id>/out`, `<id>/head` (the head gradient passed
to backward, ignored by most heads), `<id>/grad` (data gradient) and `<id>/label_grad` (MXNet
leaves it untouched, so it stays at its zero initialisation). The op name and attrs live in CASES
below, which tests/ops/test_loss.py imports.
"""
from __future__ import annotations

import os

import numpy as np

# id: (op, attrs, data shape, label kind)
CASES = {
    "sm_null": ("SoftmaxOutput", {}, (4, 5), "index"),
    "sm_batch": ("SoftmaxOutput", {"normalization": "batch", "grad_scale": 2.0}, (4, 5), "index"),
    "sm_valid_ignore": ("SoftmaxOutput", {"normalization": "valid", "use_ignore": True,
                                          "ignore_label": 2.0}, (6, 5), "index"),
    "sm_valid_noignore": ("SoftmaxOutput", {"normalization": "valid", "ignore_label": 2.0},
                          (6, 5), "index"),
    "sm_valid_allignored": ("SoftmaxOutput", {"normalization": "valid", "use_ignore": True,
                                              "ignore_label": 1.0}, (3, 4), "ones"),
    "sm_smooth": ("SoftmaxOutput", {"smooth_alpha": 0.2, "use_ignore": True,
                                    "ignore_label": 0.0}, (6, 5), "index"),
    "sm_neg_label": ("SoftmaxOutput", {}, (3, 4), "neg"),
    "sm_prob": ("SoftmaxOutput", {"normalization": "batch"}, (3, 4), "prob"),
    "sm_3d": ("SoftmaxOutput", {"normalization": "batch"}, (2, 3, 4), "index_flat3d"),
    "sm_multi": ("SoftmaxOutput", {"multi_output": True}, (2, 3, 4), "index"),
    "sm_multi_batch": ("SoftmaxOutput", {"multi_output": True, "normalization": "batch"},
                       (2, 3, 4, 5), "index"),
    "sm_multi_valid": ("SoftmaxOutput", {"multi_output": True, "normalization": "valid",
                                         "use_ignore": True, "ignore_label": 1.0},
                       (2, 3, 4), "index"),
    "sm_multi_l2": ("SoftmaxOutput", {"multi_output": True}, (2, 3, 4, 5), "index_l2"),
    "sm_preserve": ("SoftmaxOutput", {"preserve_shape": True}, (2, 3, 4), "index_last"),
    "sm_preserve_batch": ("SoftmaxOutput", {"preserve_shape": True, "normalization": "batch"},
                          (2, 3, 4), "index_last"),
    "sm_preserve_valid": ("SoftmaxOutput", {"preserve_shape": True, "normalization": "valid",
                                            "use_ignore": True, "ignore_label": 3.0},
                          (2, 3, 4), "index_last"),
    "sm_out_grad": ("SoftmaxOutput", {"out_grad": True, "normalization": "batch"}, (3, 4),
                    "index"),
    "lin_n1": ("LinearRegressionOutput", {"grad_scale": 3.0}, (4, 1), "reg1d"),
    "lin_nk": ("LinearRegressionOutput", {}, (4, 3), "reg"),
    "lin_3d": ("LinearRegressionOutput", {}, (2, 3, 2), "reg_flat"),
    "logistic": ("LogisticRegressionOutput", {}, (4, 3), "reg01"),
    "logistic_n1": ("LogisticRegressionOutput", {"grad_scale": 0.5}, (5, 1), "reg01_1d"),
    "mae": ("MAERegressionOutput", {}, (4, 3), "reg"),
    "mae_n1": ("MAERegressionOutput", {"grad_scale": 2.0}, (4, 1), "reg1d"),
    "makeloss_null": ("MakeLoss", {"grad_scale": 2.0}, (3, 4), None),
    "makeloss_batch": ("MakeLoss", {"normalization": "batch"}, (3, 4), None),
    "makeloss_valid": ("MakeLoss", {"normalization": "valid", "valid_thresh": 0.1}, (3, 4), None),
    "sce": ("softmax_cross_entropy", {}, (4, 5), "index"),
}


def make_inputs(shape, kind, rng):
    data = rng.randn(*shape)
    if kind is None:
        return data, None
    n = shape[0]
    if kind in ("index", "neg", "ones"):
        k = shape[1]
        rest = shape[2:]
        label = rng.randint(0, k, (n,) + rest).astype(np.float64)
        if kind == "neg":
            label[1] = -1
        if kind == "ones":
            label[:] = 1
        return data, label
    if kind == "index_last":
        return data, rng.randint(0, shape[-1], shape[:-1]).astype(np.float64)
    if kind == "index_flat3d":
        return data, rng.randint(0, shape[1] * shape[2], (n, shape[1])).astype(np.float64)
    if kind == "index_l2":
        return data, rng.randint(0, shape[1], (n, int(np.prod(shape[2:])))).astype(np.float64)
    if kind == "prob":
        p = rng.rand(*shape)
        return data, p / p.sum(1, keepdims=True)
    if kind == "reg":
        return data, rng.randn(*shape)
    if kind == "reg_flat":
        return data, rng.randn(n, int(np.prod(shape[1:])))
    if kind == "reg1d":
        return data, rng.randn(n)
    if kind == "reg01":
        return data, rng.rand(*shape)
    if kind == "reg01_1d":
        return data, rng.rand(n)
    raise ValueError(kind)


def main():
    import mxnet as mx

    rng = np.random.RandomState(42)
    out = {}
    for cid, (op, attrs, shape, kind) in CASES.items():
        data, label = make_inputs(shape, kind, rng)
        d = mx.sym.Variable("data")
        args = {"data": mx.nd.array(data, dtype="float64")}
        grads = {"data": mx.nd.zeros(shape, dtype="float64")}
        if label is None:
            sym = getattr(mx.sym, op)(d, name="loss", **attrs)
        else:
            lab = mx.sym.Variable("loss_label")
            sym = getattr(mx.sym, op)(d, lab, name="loss", **attrs)
            args["loss_label"] = mx.nd.array(label, dtype="float64")
            grads["loss_label"] = mx.nd.zeros(label.shape, dtype="float64")
        req = {"data": "write", "loss_label": "null" if op == "softmax_cross_entropy" else "write"}
        ex = sym.bind(mx.cpu(), args, args_grad=grads, grad_req=req)
        res = ex.forward(is_train=True)[0].asnumpy()
        head = rng.uniform(-1, 1, res.shape)
        ex.backward([mx.nd.array(head, dtype="float64")])
        out[cid + "/data"] = data
        out[cid + "/out"] = res
        out[cid + "/head"] = head
        out[cid + "/grad"] = ex.grad_dict["data"].asnumpy()
        if label is not None:
            out[cid + "/label"] = label
            if req["loss_label"] == "write":
                out[cid + "/label_grad"] = ex.grad_dict["loss_label"].asnumpy()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss_golden.npz")
    np.savez_compressed(path, **out)
    print("wrote %d arrays to %s" % (len(out), path))


if __name__ == "__main__":
    main()
