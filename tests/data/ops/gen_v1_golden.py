"""Write v1_golden.npz: MXNet 1.9.1's deprecated Convolution_v1, Pooling_v1 and BatchNorm_v1,
forward and backward, with the moving statistics BatchNorm_v1 leaves behind.

Needs an MXNet 1.9.1 environment (the tests only read the .npz):
    OMP_NUM_THREADS=1 /tmp/mxenv/bin/python tests/data/ops/gen_v1_golden.py
Per case `<name>/...`: `meta` (JSON: op, attrs, is_train, argument and aux names), `arg_<n>`,
`aux_<n>` (before), `out<i>` (every visible output), `head<i>`, `grad_<n>` and `auxout_<n>`.
"""
import json
import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(5)
out = {}


def run(name, op, shape, is_train=True, ints=False, aux=None, data_range=(-1, 1), **attrs):
    sym = getattr(mx.sym, op)(mx.sym.Variable("data"), name="op", **attrs)
    exe = sym.simple_bind(mx.cpu(), data=shape)
    args = {}
    for n in sym.list_arguments():
        a = exe.arg_dict[n]
        v = (rng.randint(-3, 2, a.shape) if ints and n == "data"
             else rng.uniform(*(data_range if n == "data" else (-1, 1)), size=a.shape)
             ).astype("float32")
        a[:] = v
        args[n] = v
    auxv = {}
    for i, n in enumerate(sym.list_auxiliary_states()):
        v = (aux[i] if aux is not None else rng.uniform(0.2, 1.5, exe.aux_dict[n].shape))
        v = np.asarray(v, "float32")
        exe.aux_dict[n][:] = v
        auxv[n] = v
    ys = exe.forward(is_train=is_train)
    heads = [rng.uniform(-1, 1, y.shape).astype("float32") for y in ys]
    exe.backward([mx.nd.array(h) for h in heads])
    out[name + "/meta"] = np.array(json.dumps(dict(
        op=op, attrs=attrs, is_train=is_train, args=sym.list_arguments(),
        aux=sym.list_auxiliary_states(), n_out=len(ys))))
    for n, v in args.items():
        out["%s/arg_%s" % (name, n)] = v
        out["%s/grad_%s" % (name, n)] = exe.grad_dict[n].asnumpy()
    for n, v in auxv.items():
        out["%s/aux_%s" % (name, n)] = v
        out["%s/auxout_%s" % (name, n)] = exe.aux_dict[n].asnumpy()
    for i, (y, h) in enumerate(zip(ys, heads)):
        out["%s/out%d" % (name, i)] = y.asnumpy()
        out["%s/head%d" % (name, i)] = h


run("conv", "Convolution_v1", (2, 3, 7, 6), kernel=(3, 3), num_filter=4)
run("conv_stride_pad", "Convolution_v1", (2, 3, 7, 6), kernel=(3, 2), num_filter=2,
    stride=(2, 1), pad=(1, 1), no_bias=True)
run("conv_group_dilate", "Convolution_v1", (1, 4, 8, 8), kernel=(3, 3), num_filter=6,
    num_group=2, dilate=(2, 2))
for pool_type in ("max", "avg", "sum"):
    for conv in ("valid", "full"):
        for shape in ((2, 3, 6, 6), (1, 2, 7, 5)):
            tag = "%s_%s_%dx%d" % (pool_type, conv, shape[2], shape[3])
            run("pool_" + tag, "Pooling_v1", shape, ints=pool_type == "max",
                kernel=(3, 2), stride=(2, 2), pad=(1, 1), pool_type=pool_type,
                pooling_convention=conv)
    run("pool_%s_overlap_nopad" % pool_type, "Pooling_v1", (2, 2, 5, 5),
        ints=pool_type == "max", kernel=(3, 3), pool_type=pool_type)
    run("pool_%s_global" % pool_type, "Pooling_v1", (2, 3, 4, 5), ints=pool_type == "max",
        kernel=(2, 2), pad=(1, 1), global_pool=True, pool_type=pool_type)
run("pool_max_negative_pad", "Pooling_v1", (1, 2, 4, 4), data_range=(-1, -0.1),
    kernel=(3, 3), pad=(2, 2), stride=(2, 2), pool_type="max")
moving = [[0.1, -0.2, 0.3], [1.5, 0.5, 2.0]]
for shape in ((6, 3), (4, 3, 2, 3)):
    tag = "%dd" % len(shape)
    for is_train in (True, False):
        mode = "train" if is_train else "infer"
        run("bn_%s_%s" % (tag, mode), "BatchNorm_v1", shape, is_train, aux=moving)
        run("bn_%s_%s_gamma" % (tag, mode), "BatchNorm_v1", shape, is_train, aux=moving,
            fix_gamma=False, output_mean_var=True, eps=1e-5, momentum=0.7)
        run("bn_%s_%s_global" % (tag, mode), "BatchNorm_v1", shape, is_train, aux=moving,
            fix_gamma=False, use_global_stats=True)

np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "v1_golden.npz"), **out)
print("wrote %d arrays" % len(out))
