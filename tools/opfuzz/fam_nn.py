"""Op cases for opfuzz:
Convolution, Deconvolution, Pooling, slicing and reshapes, broadcast binaries, reductions,
softmaxes, normalisation layers, activations, shape/index ops, sequence ops and products.

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
                "conv",
                "deconv",
                "pool",
                "slice",
                "reshape",
                "bcast",
                "reduce",
                "softmax",
                "norm",
                "act",
                "misc",
                "index",
                "seq",
                "la",
            ]
        )
        N = R.randint(1, 3)
        C = R.randint(1, 4)
        H = R.randint(3, 8)
        W = R.randint(3, 8)
        if kind == "conv":
            k = R.randint(1, 3)
            s = R.randint(1, 2)
            d = R.randint(1, 2)
            p = R.randint(0, 2)
            g = R.choice([1, 1, C])
            f = g * R.randint(1, 3)
            if (H + 2 * p - d * (k - 1) - 1) < 0 or (W + 2 * p - d * (k - 1) - 1) < 0:
                continue
            add(
                "Convolution",
                dict(
                    kernel=(k, k),
                    stride=(s, s),
                    dilate=(d, d),
                    pad=(p, p),
                    num_filter=f,
                    num_group=g,
                    no_bias=R.random() < 0.3,
                ),
                {"data": (N, C, H, W)},
            )
        elif kind == "deconv":
            k = R.randint(1, 3)
            s = R.randint(1, 2)
            p = R.randint(0, 1)
            a = R.randint(0, s - 1)
            g = R.choice([1, C])
            f = g * R.randint(1, 2)
            if p > (k - 1):
                p = 0
            add(
                "Deconvolution",
                dict(
                    kernel=(k, k),
                    stride=(s, s),
                    pad=(p, p),
                    adj=(a, a),
                    num_filter=f,
                    num_group=g,
                    no_bias=R.random() < 0.5,
                ),
                {"data": (N, C, H, W)},
            )
        elif kind == "pool":
            k = R.randint(1, 3)
            s = R.randint(1, 3)
            p = R.randint(0, k // 2)
            t = R.choice(["max", "avg", "sum", "lp"])
            prm = dict(
                kernel=(k, k),
                stride=(s, s),
                pad=(p, p),
                pool_type=t,
                pooling_convention=R.choice(["valid", "full"]),
            )
            if t == "avg":
                prm["count_include_pad"] = R.random() < 0.5
            if t == "lp":
                prm["p_value"] = R.choice([1, 2, 3])
            if R.random() < 0.15:
                prm = dict(kernel=(1, 1), global_pool=True, pool_type=t if t != "lp" else "max")
            add("Pooling", prm, {"data": (N, C, H, W)})
        elif kind == "slice":
            b0 = R.randint(-H, H - 1)
            e0 = R.choice([None, R.randint(-H, H)])
            st = R.choice([None, 1, 2, -1, -2])
            add(
                "slice",
                dict(begin=(None, None, b0), end=(None, None, e0), step=(None, None, st)),
                {"data": (N, C, H, W)},
            )
        elif kind == "reshape":
            choice = R.choice(
                [(0, -1), (-2,), (0, 0, -3), (-3, -2), (0, -4, 1, -1, 0, 0), (-1,), (0, 0, 0, -3)]
            )
            add("Reshape", dict(shape=choice, reverse=R.random() < 0.3), {"data": (N, C, H, W)})
        elif kind == "bcast":
            op = R.choice(
                [
                    "broadcast_add",
                    "broadcast_sub",
                    "broadcast_mul",
                    "broadcast_div",
                    "broadcast_maximum",
                    "broadcast_minimum",
                    "broadcast_power",
                    "broadcast_hypot",
                ]
            )
            s2 = tuple(x if R.random() < 0.5 else 1 for x in (N, C, H, W))
            add(op, {}, {"lhs": (N, C, H, W), "rhs": s2}, positive=True)
        elif kind == "reduce":
            op = R.choice(["sum", "mean", "max", "min", "prod", "nansum", "norm"])
            ax = R.choice([None, 0, 1, -1, (1, 2), (0, 3)])
            prm = dict(keepdims=R.random() < 0.5)
            if ax is not None:
                prm["axis"] = ax
            if op != "norm" and R.random() < 0.3 and ax is not None:
                prm["exclude"] = True
            add(op, prm, {"data": (N, C, H, W)})
        elif kind == "softmax":
            op = R.choice(["softmax", "log_softmax", "softmin", "SoftmaxActivation"])
            prm = (
                {}
                if op == "SoftmaxActivation"
                else dict(axis=R.choice([-1, 1, 0]), temperature=R.choice([None, 0.5, 2.0]))
            )
            if op == "SoftmaxActivation":
                prm = dict(mode=R.choice(["instance", "channel"]))
            prm = {k: v for k, v in prm.items() if v is not None}
            add(op, prm, {"data": (N, C, H, W)})
        elif kind == "norm":
            op = R.choice(
                ["BatchNorm", "InstanceNorm", "LayerNorm", "L2Normalization", "LRN", "GroupNorm"]
            )
            prm = {}
            if op == "BatchNorm":
                prm = dict(
                    fix_gamma=R.random() < 0.5,
                    use_global_stats=R.random() < 0.2,
                    axis=R.choice([1, -1]),
                )
            if op == "LayerNorm":
                prm = dict(axis=R.choice([-1, 1]))
            if op == "L2Normalization":
                prm = dict(mode=R.choice(["instance", "channel", "spatial"]))
            if op == "LRN":
                prm = dict(nsize=R.choice([1, 3, 5]))
            if op == "GroupNorm":
                C = 4
                prm = dict(num_groups=R.choice([1, 2, 4]))
            add(op, prm, {"data": (N, C, H, W)})
        elif kind == "act":
            op = R.choice(["Activation", "LeakyReLU"])
            if op == "Activation":
                prm = dict(act_type=R.choice(["relu", "sigmoid", "tanh", "softrelu", "softsign"]))
            else:
                prm = dict(
                    act_type=R.choice(["leaky", "elu", "prelu", "selu", "gelu"]),
                    slope=R.choice([0.1, 0.25]),
                )
            add(op, prm, {"data": (N, C, H, W)})
        elif kind == "misc":
            op = R.choice(
                [
                    "transpose",
                    "SwapAxis",
                    "flip",
                    "tile",
                    "repeat",
                    "Pad",
                    "clip",
                    "Flatten",
                    "expand_dims",
                    "UpSampling",
                    "Crop",
                    "topk",
                    "sort",
                    "argsort",
                    "Cast",
                    "smooth_l1",
                ]
            )
            prm = {}
            shapes = {"data": (N, C, H, W)}
            if op == "transpose":
                prm = dict(axes=tuple(R.sample(range(4), 4)))
            if op == "SwapAxis":
                prm = dict(dim1=R.randint(0, 3), dim2=R.randint(0, 3))
            if op == "flip":
                prm = dict(axis=R.randint(0, 3))
            if op == "tile":
                prm = dict(reps=(1, R.randint(1, 2), 1, R.randint(1, 2)))
            if op == "repeat":
                prm = dict(repeats=R.randint(1, 3), axis=R.choice([None, 1, -1]))
            if op == "Pad":
                prm = dict(
                    mode=R.choice(["constant", "edge", "reflect"]),
                    pad_width=(0, 0, 0, 0, 1, 1, 2, 1),
                    constant_value=0.5,
                )
            if op == "clip":
                prm = dict(a_min=-0.3, a_max=R.choice([0.2, 0.6]))
            if op == "expand_dims":
                prm = dict(axis=R.randint(-5, 4))
            if op == "UpSampling":
                prm = dict(scale=R.randint(1, 3), sample_type="nearest", num_args=1)
            if op == "Crop":
                prm = dict(
                    num_args=1,
                    h_w=(2, 2),
                    offset=(R.randint(0, 1), R.randint(0, 1)),
                    center_crop=R.random() < 0.5,
                )
            if op in ("topk",):
                prm = dict(
                    k=R.randint(1, 3),
                    axis=-1,
                    ret_typ=R.choice(["value", "indices", "mask"]),
                    is_ascend=R.random() < 0.5,
                )
            if op in ("sort", "argsort"):
                prm = dict(axis=R.choice([-1, 1]), is_ascend=R.random() < 0.5)
            if op == "Cast":
                prm = dict(dtype=R.choice(["float64", "float16", "int32"]))
            if op == "smooth_l1":
                prm = dict(scalar=R.choice([0.5, 1.0, 2.0]))
            prm = {k: v for k, v in prm.items() if v is not None}
            add(op, prm, shapes)
        elif kind == "index":
            op = R.choice(
                ["take", "pick", "one_hot", "Embedding", "gather_nd", "batch_take", "SequenceMask"]
            )
            if op == "take":
                add(
                    op,
                    dict(axis=R.choice([0, 1, -1]), mode=R.choice(["clip", "wrap"])),
                    {"a": (N + 2, C, H), "indices": (2, 3)},
                    int_input=("indices", -3, 8),
                )
            elif op == "pick":
                add(
                    op,
                    dict(
                        axis=R.choice([1, -1, 0]),
                        keepdims=R.random() < 0.5,
                        mode=R.choice(["clip", "wrap"]),
                    ),
                    {"data": (N, C, H), "index": None},
                    int_input=("index", -2, 6),
                )
            elif op == "one_hot":
                add(
                    op,
                    dict(depth=R.randint(2, 6), on_value=2.0, off_value=-1.0),
                    {"indices": (N, C)},
                    int_input=("indices", -1, 7),
                    no_grad=True,
                )
            elif op == "Embedding":
                add(op, dict(input_dim=6, output_dim=3), {"data": (N, C)}, int_input=("data", 0, 5))
            elif op == "gather_nd":
                add(op, {}, {"data": (N + 1, C, H), "indices": (2, 4)}, int_input=("indices", 0, 1))
            elif op == "batch_take":
                add(op, {}, {"a": (N, C), "indices": (N,)}, int_input=("indices", 0, C - 1))
            else:
                add(
                    op,
                    dict(
                        use_sequence_length=True, value=R.choice([0.0, -1.0]), axis=R.choice([0, 1])
                    ),
                    {"data": (H, N, C), "sequence_length": (N,)},
                    int_input=("sequence_length", 1, 3),
                )
        elif kind == "seq":
            op = R.choice(["SequenceLast", "SequenceReverse", "SequenceMask"])
            add(
                op,
                dict(use_sequence_length=True),
                {"data": (H, N, C), "sequence_length": (N,)},
                int_input=("sequence_length", 1, 3),
            )
        elif kind == "la":
            op = R.choice(["dot", "batch_dot", "linalg_gemm2", "FullyConnected"])
            if op == "dot":
                ta, tb = R.random() < 0.5, R.random() < 0.5
                a = (C, H) if not ta else (H, C)
                b = (H, W) if not tb else (W, H)
                add(op, dict(transpose_a=ta, transpose_b=tb), {"lhs": a, "rhs": b})
            elif op == "batch_dot":
                add(op, dict(transpose_b=True), {"lhs": (N, C, H), "rhs": (N, W, H)})
            elif op == "linalg_gemm2":
                add(op, dict(transpose_a=True, alpha=0.5), {"A": (N, H, C), "B": (N, H, W)})
            else:
                add(
                    op,
                    dict(
                        num_hidden=R.randint(1, 5),
                        flatten=R.random() < 0.5,
                        no_bias=R.random() < 0.3,
                    ),
                    {"data": (N, C, H)},
                )
    return cases
