"""Op cases for opfuzz:
Loss heads (SoftmaxOutput's options, regression heads, SVMOutput, softmax_cross_entropy,
MakeLoss), 1-D and 3-D convolution and pooling, multi-output and shape ops, spatial ops,
elementwise maths, more reductions, and float64/float16 layers.

`gen(seed, n)` gives up to n case dicts (see run.py for their keys)."""

import random

from fuzz_cases import Cases


def gen(seed, n):
    R = random.Random(seed)
    cases = Cases()
    add = cases.add

    for _ in range(n):
        kind = R.choice(
            [
                "loss",
                "conv1d3d",
                "pool1d3d",
                "multi",
                "shape",
                "spatial",
                "elem",
                "reduce2",
                "dtype",
            ]
        )
        N = R.randint(1, 3)
        C = R.randint(1, 4)
        H = R.randint(3, 7)
        W = R.randint(3, 7)
        if kind == "loss":
            op = R.choice(
                [
                    "SoftmaxOutput",
                    "LinearRegressionOutput",
                    "LogisticRegressionOutput",
                    "MAERegressionOutput",
                    "SVMOutput",
                    "softmax_cross_entropy",
                    "MakeLoss",
                ]
            )
            if op == "SoftmaxOutput":
                mo = R.random() < 0.5
                prm = dict(
                    multi_output=mo,
                    use_ignore=R.random() < 0.5,
                    ignore_label=R.choice([0, 1]),
                    normalization=R.choice(["null", "batch", "valid"]),
                    grad_scale=R.choice([1.0, 0.5]),
                    smooth_alpha=R.choice([0.0, 0.1]),
                )
                if R.random() < 0.3 and not mo:
                    prm["preserve_shape"] = True
                if prm.get("preserve_shape"):
                    add(
                        op, prm, {"data": (N, C, H), "label": (N, C)}, int_input=("label", 0, H - 1)
                    )
                elif mo:
                    add(
                        op, prm, {"data": (N, C, H), "label": (N, H)}, int_input=("label", 0, C - 1)
                    )
                else:
                    add(op, prm, {"data": (N, C), "label": (N,)}, int_input=("label", 0, C - 1))
            elif op == "SVMOutput":
                add(
                    op,
                    dict(
                        margin=R.choice([1.0, 0.5]),
                        regularization_coefficient=R.choice([1.0, 0.3]),
                        use_linear=R.random() < 0.5,
                    ),
                    {"data": (N, C + 1), "label": (N,)},
                    int_input=("label", 0, C),
                )
            elif op == "softmax_cross_entropy":
                add(op, {}, {"data": (N, C + 1), "label": (N,)}, int_input=("label", 0, C))
            elif op == "MakeLoss":
                add(
                    op,
                    dict(
                        grad_scale=R.choice([1.0, 2.0]),
                        normalization=R.choice(["null", "batch", "valid"]),
                        valid_thresh=0.1,
                    ),
                    {"data": (N, C)},
                )
            else:
                add(op, dict(grad_scale=R.choice([1.0, 0.5])), {"data": (N, C), "label": (N, C)})
        elif kind == "conv1d3d":
            if R.random() < 0.5:
                k = R.randint(1, 3)
                s = R.randint(1, 2)
                p = R.randint(0, 1)
                d = R.randint(1, 2)
                if H + 2 * p < d * (k - 1) + 1:
                    continue
                op = R.choice(["Convolution", "Deconvolution"])
                prm = dict(kernel=(k,), stride=(s,), pad=(p,), num_filter=R.randint(1, 3))
                if op == "Convolution":
                    prm["dilate"] = (d,)
                add(op, prm, {"data": (N, C, H)})
            else:
                k = R.randint(1, 2)
                op = R.choice(["Convolution", "Deconvolution"])
                add(
                    op,
                    dict(
                        kernel=(k, k, k),
                        stride=(1, R.randint(1, 2), 1),
                        pad=(0, 1, 0) if k > 1 else (0, 0, 0),
                        num_filter=2,
                    ),
                    {"data": (N, C, 3, H, W)},
                )
        elif kind == "pool1d3d":
            t = R.choice(["max", "avg", "sum"])
            if R.random() < 0.5:
                add(
                    "Pooling",
                    dict(
                        kernel=(2,),
                        stride=(R.randint(1, 2),),
                        pool_type=t,
                        pooling_convention=R.choice(["valid", "full"]),
                    ),
                    {"data": (N, C, H)},
                )
            else:
                add(
                    "Pooling",
                    dict(kernel=(2, 2, 2), stride=(1, 2, 2), pad=(1, 0, 1), pool_type=t),
                    {"data": (N, C, 3, H, W)},
                )
        elif kind == "multi":
            op = R.choice(
                ["SliceChannel", "split_v2", "Concat", "stack", "add_n", "ElementWiseSum"]
            )
            if op == "SliceChannel":
                add(
                    op,
                    dict(num_outputs=2, axis=R.choice([1, -1]), squeeze_axis=False),
                    {"data": (N, 2, 4)},
                    multi=True,
                )
            elif op == "split_v2":
                add(op, dict(indices_or_sections=(1, 3), axis=-1), {"data": (N, C, 5)}, multi=True)
            elif op in ("Concat",):
                add(
                    op, dict(dim=R.choice([0, 1, -1]), num_args=2), {"a": (N, C, H), "b": (N, C, H)}
                )
            elif op == "stack":
                add(op, dict(axis=R.choice([0, 1, -1]), num_args=2), {"a": (N, C), "b": (N, C)})
            else:
                add(op, dict(num_args=3), {"a": (N, C), "b": (N, C), "c": (N, C)})
        elif kind == "shape":
            op = R.choice(
                [
                    "broadcast_to",
                    "broadcast_axis",
                    "reverse",
                    "squeeze",
                    "diag",
                    "space_to_depth",
                    "depth_to_space",
                    "SwapAxis",
                    "slice_axis",
                    "slice_like",
                    "reshape_like",
                    "broadcast_like",
                ]
            )
            if op == "broadcast_to":
                add(op, dict(shape=(N, 0, 3)), {"data": (N, C, 1)})
            elif op == "broadcast_axis":
                add(op, dict(axis=(2,), size=(3,)), {"data": (N, C, 1)})
            elif op == "reverse":
                add(op, dict(axis=R.choice([0, 1, 2])), {"data": (N, C, H)})
            elif op == "squeeze":
                add(op, dict(axis=(1,)), {"data": (N, 1, H)})
            elif op == "diag":
                add(op, dict(k=R.randint(-1, 1)), {"data": (H, W)})
            elif op == "space_to_depth":
                add(op, dict(block_size=2), {"data": (N, C, 4, 6)})
            elif op == "depth_to_space":
                add(op, dict(block_size=2), {"data": (N, 4, 3, 2)})
            elif op == "SwapAxis":
                add(op, dict(dim1=0, dim2=2), {"data": (N, C, H)})
            elif op == "slice_axis":
                add(
                    op,
                    dict(axis=R.choice([1, -1]), begin=R.randint(-2, 0), end=None),
                    {"data": (N, C + 2, H)},
                )
            elif op == "slice_like":
                add(
                    op,
                    dict(axes=(1,)),
                    {"data": (N, C + 2, H), "shape_like": (N, C, H)},
                    no_grad_for=("shape_like",),
                )
            elif op == "reshape_like":
                add(op, {}, {"lhs": (N, C * H), "rhs": (N, C, H)})
            else:
                add(op, dict(lhs_axes=(1,), rhs_axes=(1,)), {"lhs": (N, 1, H), "rhs": (N, C, H)})
        elif kind == "spatial":
            op = R.choice(
                [
                    "UpSampling",
                    "BilinearSampler",
                    "GridGenerator",
                    "ROIPooling",
                    "Correlation",
                    "SpatialTransformer",
                ]
            )
            if op == "UpSampling":
                add(
                    op,
                    dict(scale=2, sample_type="bilinear", num_filter=C, num_args=2),
                    {"data": (N, C, H, W), "weight": (C, 1, 4, 4)},
                )
            elif op == "BilinearSampler":
                add(op, {}, {"data": (N, C, H, W), "grid": (N, 2, 4, 5)})
            elif op == "GridGenerator":
                add(op, dict(transform_type="affine", target_shape=(4, 5)), {"data": (N, 6)})
            elif op == "ROIPooling":
                add(
                    op,
                    dict(pooled_size=(2, 2), spatial_scale=1.0),
                    {"data": (1, C, 8, 8), "rois": (2, 5)},
                    rois=True,
                )
            elif op == "Correlation":
                add(
                    op,
                    dict(kernel_size=1, max_displacement=1, stride1=1, stride2=1, pad_size=1),
                    {"data1": (N, C, H, W), "data2": (N, C, H, W)},
                )
            else:
                add(
                    op,
                    dict(transform_type="affine", sampler_type="bilinear", target_shape=(4, 4)),
                    {"data": (N, C, H, W), "loc": (N, 6)},
                )
        elif kind == "elem":
            op = R.choice(
                [
                    "gamma",
                    "gammaln",
                    "erf",
                    "erfinv",
                    "rsqrt",
                    "rcbrt",
                    "reciprocal",
                    "expm1",
                    "log1p",
                    "arcsin",
                    "arctanh",
                    "sinh",
                    "degrees",
                    "fix",
                    "rint",
                    "trunc",
                    "sigmoid",
                    "softsign",
                    "hard_sigmoid",
                    "log_sigmoid",
                    "mish",
                    "relu",
                ]
            )
            pos = op in ("gamma", "gammaln", "rsqrt", "rcbrt", "reciprocal", "log1p")
            add(
                op,
                {},
                {"data": (N, C, H)},
                positive=pos,
                half=op in ("erfinv", "arcsin", "arctanh"),
            )
        elif kind == "reduce2":
            op = R.choice(["argmax", "argmin", "moments", "norm", "nanprod", "max_axis", "mean"])
            if op in ("argmax", "argmin"):
                add(
                    op,
                    dict(axis=R.choice([0, 1, -1]), keepdims=R.random() < 0.5),
                    {"data": (N, C, H)},
                    no_grad=True,
                )
            elif op == "moments":
                add(
                    op,
                    dict(axes=(1, 2), keepdims=R.random() < 0.5),
                    {"data": (N, C, H)},
                    multi=True,
                )
            elif op == "norm":
                add(
                    op,
                    dict(ord=R.choice([1, 2]), axis=(1,), keepdims=R.random() < 0.5),
                    {"data": (N, C, H)},
                )
            else:
                add(op, dict(axis=R.choice([1, (0, 2)])), {"data": (N, C, H)})
        else:
            dt = R.choice(["float64", "float16"])
            op = R.choice(
                ["FullyConnected", "Convolution", "Activation", "softmax", "BatchNorm", "Pooling"]
            )
            prm = {
                "FullyConnected": dict(num_hidden=3),
                "Convolution": dict(kernel=(3, 3), num_filter=2, pad=(1, 1)),
                "Activation": dict(act_type="tanh"),
                "softmax": dict(axis=1),
                "BatchNorm": dict(fix_gamma=False),
                "Pooling": dict(kernel=(2, 2), pool_type="avg"),
            }[op]
            add(op, prm, {"data": (N, C, H, W)}, dtype=dt)
    return cases
