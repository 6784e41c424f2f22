"""Write contrib_models_golden.npz: outputs, input gradients and updated moving statistics of
MXNet 1.9.1's _contrib_SyncBatchNorm, _contrib_BatchNormWithReLU, _contrib_gradientmultiplier,
_contrib_round_ste, _contrib_sign_ste and _contrib_ModulatedDeformableConvolution.

Run with an MXNet 1.9.1 environment (not needed by the tests):
    OMP_NUM_THREADS=1 python tests/data/ops/gen_contrib_models_golden.py
MXNet runs BatchNormWithReLU through oneDNN only (its CPU op has no other kernel, and that one
takes 4-D float32 data with axis=1), so its cases run in a child process with
MXNET_MKLDNN_ENABLED=1; everything else runs the reference
kernels (MXNET_MKLDNN_ENABLED=0). MXNet's CPU build has no backward for
ModulatedDeformableConvolution ("only implemented in GPU"): its cases hold the forward only.

Each case stores its inputs (arguments, then aux states), the op's registered name and attrs
(JSON), whether it ran in training mode, every visible output, the head gradient of output 0
(the only head used: the normalisations ignore the heads of their statistics), the gradients
of the differentiated inputs and the aux states after backward.
"""
import json
import os
import subprocess
import sys
import tempfile

ONEDNN_PART = "--onednn-part"
os.environ.setdefault("MXNET_MKLDNN_ENABLED", "1" if ONEDNN_PART in sys.argv else "0")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

rs = np.random.RandomState(11)


def r(*shape, scale=1.0):
    return (rs.randn(*shape) * scale).astype("float32")


def u(lo, hi, *shape):
    return rs.uniform(lo, hi, shape).astype("float32")


def norm_inputs(shape):
    c = shape[1]
    return [r(*shape, scale=1.5) + 0.3, u(0.5, 1.5, c), r(c), r(c, scale=0.2),
            u(0.5, 2.0, c)]


def dcn_inputs(n, c, h, w, f, kernel, ho, wo, groups=1, dg=1, bias=True, spread=2.0):
    k = kernel[0] * kernel[1]
    inputs = [r(n, c, h, w), u(-spread, spread, n, 2 * dg * k, ho, wo),
              u(0.0, 1.0, n, dg * k, ho, wo), r(f, c // groups, *kernel, scale=0.3)]
    return inputs + [r(f)] if bias else inputs


# name: (registered op, attrs, [inputs], differentiated inputs, training, needs oneDNN)
CASES = {
    "syncbn": ("_contrib_SyncBatchNorm",
               dict(key="golden_syncbn", fix_gamma=False, output_mean_var=True, momentum=0.8),
               norm_inputs((3, 4, 5, 6)), [0, 1, 2], True, False),
    "syncbn_fix_gamma": ("_contrib_SyncBatchNorm", dict(key="golden_syncbn_fix", eps=1e-4),
                         norm_inputs((4, 3, 7)), [0, 1, 2], True, False),
    "syncbn_2d": ("_contrib_SyncBatchNorm",
                  dict(key="golden_syncbn_2d", fix_gamma=False, output_mean_var=True),
                  norm_inputs((6, 5)), [0, 1, 2], True, False),
    "syncbn_global": ("_contrib_SyncBatchNorm",
                      dict(key="golden_syncbn_global", fix_gamma=False, use_global_stats=True),
                      norm_inputs((2, 3, 4, 4)), [0, 1, 2], True, False),
    "syncbn_inference": ("_contrib_SyncBatchNorm", dict(key="golden_syncbn_inf",
                                                        fix_gamma=False),
                         norm_inputs((2, 3, 4, 4)), [], False, False),
    "bnrelu": ("_contrib_BatchNormWithReLU", dict(fix_gamma=False, output_mean_var=True),
               norm_inputs((3, 4, 5, 6)), [0, 1, 2], True, True),
    "bnrelu_fix_gamma": ("_contrib_BatchNormWithReLU", dict(momentum=0.7),
                         norm_inputs((4, 3, 2, 7)), [0, 1, 2], True, True),
    "bnrelu_global": ("_contrib_BatchNormWithReLU",
                      dict(fix_gamma=False, use_global_stats=True),
                      norm_inputs((2, 3, 4, 4)), [0, 1, 2], True, True),
    "bnrelu_inference": ("_contrib_BatchNormWithReLU", dict(fix_gamma=False),
                         norm_inputs((2, 3, 4, 4)), [], False, True),
    "gradmult": ("_contrib_gradientmultiplier", dict(scalar=-0.3), [r(3, 4)], [0], True,
                 False),
    "gradmult_int": ("_contrib_gradientmultiplier", dict(scalar=2), [r(5)], [0], True, False),
    "round_ste": ("_contrib_round_ste", dict(),
                  [np.array([-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 0.49, -3.7, 7.51],
                            dtype="float32")], [0], True, False),
    "sign_ste": ("_contrib_sign_ste", dict(), [np.array([-2.0, 0.0, 3.5, -0.1], "float32")],
                 [0], True, False),
    "mdcn": ("_contrib_ModulatedDeformableConvolution",
             dict(kernel=(3, 3), num_filter=4, pad=(1, 1)),
             dcn_inputs(2, 3, 5, 6, 4, (3, 3), 5, 6), [], True, False),
    "mdcn_groups": ("_contrib_ModulatedDeformableConvolution",
                    dict(kernel=(3, 2), num_filter=4, num_group=2, num_deformable_group=2,
                         stride=(2, 1), dilate=(1, 2), pad=(1, 1), no_bias=True),
                    dcn_inputs(1, 4, 7, 6, 4, (3, 2), 4, 6, groups=2, dg=2, bias=False,
                               spread=3.0), [], True, False),
    "mdcn_step": ("_contrib_ModulatedDeformableConvolution",
                  dict(kernel=(2, 2), num_filter=2, im2col_step=2),
                  dcn_inputs(4, 2, 4, 4, 2, (2, 2), 3, 3, spread=1.5), [], True, False),
}


def run(op, attrs, inputs, wrt, training):
    args = [mx.nd.array(a, dtype=a.dtype) for a in inputs]
    for i in wrt:
        args[i].attach_grad()
    function = getattr(mx.nd.contrib, op[len("_contrib_"):])
    if training:
        with mx.autograd.record():
            outs = function(*args, **attrs)
    else:
        outs = function(*args, **attrs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    head = rs.uniform(-1, 1, outs[0].shape).astype(outs[0].dtype)
    if wrt:
        outs[0].backward(mx.nd.array(head, dtype=head.dtype))
    # the moving statistics are written by backward without the engine ordering their
    # reads after it: wait for every pending operation before reading them
    mx.nd.waitall()
    return ([o.asnumpy() for o in outs], head, [args[i].grad.asnumpy() for i in wrt],
            [a.asnumpy() for a in args])


def compute(names):
    store = {}
    for name in names:
        op, attrs, inputs, wrt, training, _ = CASES[name]
        outs, head, grads, after = run(op, attrs, inputs, wrt, training)
        store[name + "/meta"] = np.array(json.dumps(dict(
            op=op, attrs=attrs, wrt=wrt, train=training, n_in=len(inputs),
            n_out=len(outs))))
        for i, a in enumerate(inputs):
            store["%s/in%d" % (name, i)] = a
            store["%s/after%d" % (name, i)] = after[i]
        for i, o in enumerate(outs):
            store["%s/out%d" % (name, i)] = o
        store[name + "/head0"] = head
        for i, g in zip(wrt, grads):
            store["%s/grad%d" % (name, i)] = g
    return store


def main():
    onednn = [n for n, case in CASES.items() if case[-1]]
    if ONEDNN_PART in sys.argv:
        np.savez(sys.argv[-1], **compute(onednn))
        return
    store = compute([n for n, case in CASES.items() if not case[-1]])
    with tempfile.TemporaryDirectory() as tmp:
        part = os.path.join(tmp, "onednn.npz")
        env = dict(os.environ, MXNET_MKLDNN_ENABLED="1")
        subprocess.run([sys.executable, os.path.abspath(__file__), ONEDNN_PART, part],
                       env=env, check=True)
        with np.load(part) as data:
            store.update({k: data[k] for k in data.files})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contrib_models_golden.npz")
    np.savez_compressed(path, **store)
    print("wrote", path, len(CASES), "cases")


if __name__ == "__main__":
    main()
