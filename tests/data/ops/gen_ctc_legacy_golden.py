"""Write ctc_legacy_golden.npz: MXNet 1.9.1's CTCLoss (losses and data gradients) and the legacy
operators of minimod/ops/legacy.py (outputs; gradients where MXNet has them).

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_ctc_legacy_golden.py
Each case stores its inputs (`<name>/in<i>`), a JSON `<name>/meta` (op, attrs, which inputs
are differentiated, whether to run in training mode), the visible output (`<name>/out0`), a
head gradient (`<name>/head`) and the input gradients (`<name>/grad<i>`).
"""
import json
import os

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")  # the reference kernels, not oneDNN's

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(7)


def r(*shape):
    return rs.randn(*shape).astype("float32")


def f32(values):
    return np.array(values, dtype="float32")


def random_labels(batch, width, classes, first=True):
    """Padded label rows of random lengths 1..width (values 1..C-1 with the blank first,
    0..C-2 with it last; padding 0 or -1)."""
    rows = np.full((batch, width), 0 if first else -1, dtype="float32")
    for i in range(batch):
        n = rs.randint(1, width + 1)
        rows[i, :n] = rs.randint(1, classes, n) if first else rs.randint(0, classes - 1, n)
    return rows


# name: (op, attrs, [inputs], train, differentiated inputs)
CASES = {
    "ctc_first": ("CTCLoss", {}, [r(6, 3, 5), f32([[1, 2, 2, 0], [3, 0, 0, 0], [1, 2, 3, 4]])],
                  True, [0]),
    "ctc_last": ("CTCLoss", dict(blank_label="last"),
                 [r(6, 3, 5), f32([[0, 1, 1, -1], [2, -1, -1, -1], [0, 1, 2, 3]])], True, [0]),
    "ctc_lengths": ("CTCLoss", dict(use_data_lengths=True, use_label_lengths=True),
                    [r(7, 3, 6), f32([[1, 2, 2, 5], [3, 4, 1, 1], [1, 5, 3, 4]]),
                     f32([7, 4, 6]), f32([3, 1, 2])], True, [0]),
    "ctc_data_lengths": ("CTCLoss", dict(use_data_lengths=True, blank_label="last"),
                         [r(8, 2, 4), f32([[0, 1, 0], [2, 2, -1]]), f32([5, 8])], True, [0]),
    "ctc_label_lengths": ("CTCLoss", dict(use_label_lengths=True),
                          [r(5, 2, 4), f32([[1, 3, 2], [3, 3, 3]]), f32([3, 2])], True, [0]),
    # a label equal to the blank inside the label length: MXNet's loss treats it as a blank
    # that cannot be skipped; its gradient there disagrees with its own loss's finite
    # differences, so only the loss is compared
    "ctc_blank_inside": ("CTCLoss", dict(use_label_lengths=True),
                         [r(5, 2, 4), f32([[1, 0, 2], [3, 3, 3]]), f32([3, 2])], False, []),
    "ctc_int_label": ("CTCLoss", {}, [r(4, 2, 5), np.array([[2, 3], [4, 0]], dtype="int32")],
                      True, [0]),
    "ctc_big": ("CTCLoss", {}, [r(20, 4, 12), random_labels(4, 8, 12)], True, [0]),
    "ctc_big_last": ("CTCLoss", dict(blank_label="last"),
                     [r(16, 3, 7), random_labels(3, 6, 7, first=False)], True, [0]),
    # fewer steps than the labels need: MXNet reports a loss of 0 (its gradient is not
    # initialised there, so only the loss is compared)
    "ctc_infeasible": ("CTCLoss", {}, [r(3, 2, 5), f32([[1, 1, 1], [1, 2, 3]])], False, []),
    "batch_take": ("batch_take", {}, [r(4, 5), np.array([0, 4, 7, -2], dtype="int32")],
                   False, []),
    "batch_take_3d": ("batch_take", {}, [r(3, 1, 4), np.array([[1], [3], [2]], dtype="int32")],
                      False, []),
    "fill_element_0index": ("fill_element_0index", {},
                            [r(4, 5), f32([10, 20, 30, 40]), f32([0, 4, 2, 1])], False, []),
    "onehot_encode": ("_onehot_encode", {}, [f32([1, 4, 7, -1, 2.7]), r(5, 5)], False, []),
    "slice_assign": ("_slice_assign", dict(begin=(1, None), end=(None, -2), step=(2, 2)),
                     [r(4, 6), r(2, 2)], False, []),
    "slice_assign_neg_step": ("_slice_assign", dict(begin=(3, 4), end=(None, 1),
                                                    step=(-2, -2)),
                              [r(4, 6), r(2, 2)], False, []),
    "crop_assign_3d": ("_crop_assign", dict(begin=(0, 1), end=(2, 3)), [r(3, 4, 2), r(2, 2, 2)],
                       False, []),
    "slice_assign_scalar": ("_slice_assign_scalar", dict(scalar=2.5, begin=(0, 1), end=(3, 5),
                                                         step=(1, 3)), [r(4, 6)], False, []),
    "crop_assign_scalar": ("_crop_assign_scalar", dict(scalar=-1, begin=(1,), end=(None,)),
                           [r(3, 2, 2)], False, []),
    "identity_like_rhs": ("_identity_with_attr_like_rhs", {}, [r(3, 4), r(3, 4)], True, [0, 1]),
    # MXNet computes _square_sum for row-sparse data only: the input is converted there
    "square_sum_axis1": ("_square_sum", dict(axis=1), [r(5, 3)], True, [0]),
    "square_sum_axis0_keep": ("_square_sum", dict(axis=0, keepdims=True), [r(5, 3)], True, [0]),
}


def function(op):
    return getattr(mx.nd, op) if hasattr(mx.nd, op) else getattr(mx.nd._internal, op)


def run(op, attrs, inputs, train, wrt):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    if op == "_square_sum":
        args = [a.tostype("row_sparse") for a in args]
    for i in wrt:
        args[i].attach_grad()
    with mx.autograd.record(train_mode=train):
        out = function(op)(*args, **attrs)
    out = out[0] if isinstance(out, list) else out
    head = rs.uniform(-1, 1, out.shape).astype("float32")
    if wrt:
        out.backward(mx.nd.array(head))
    return (out.tostype("default").asnumpy(), head,
            [args[i].grad.tostype("default").asnumpy() for i in wrt])


def main():
    store = {}
    for name, (op, attrs, inputs, train, wrt) in CASES.items():
        out, head, grads = run(op, attrs, inputs, train, wrt)
        store[name + "/meta"] = np.array(json.dumps(dict(op=op, attrs=attrs, train=train,
                                                         wrt=wrt, n_in=len(inputs))))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
        store[name + "/out0"] = out
        store[name + "/head"] = head
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctc_legacy_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
