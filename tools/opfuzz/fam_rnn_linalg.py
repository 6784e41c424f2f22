"""Op cases for opfuzz:
The RNN op (modes, layers, directions, state outputs), the linalg family, contrib ops,
CTCLoss and sequence/misc ops.

`gen(seed, n)` gives up to n case dicts (see run.py for their keys)."""

import random

from fuzz_cases import Cases


def gen(seed, n):
    R = random.Random(seed)
    cases = Cases()
    add = cases.add

    for _ in range(n):
        kind = R.choice(["rnn", "linalg", "contrib", "ctc", "misc"])
        N = R.randint(1, 3)
        C = R.randint(1, 4)
        T = R.randint(2, 5)
        if kind == "rnn":
            mode = R.choice(["lstm", "gru", "rnn_tanh", "rnn_relu"])
            L = R.randint(1, 2)
            bi = R.random() < 0.5
            H = R.randint(1, 4)
            so = R.random() < 0.5
            D = 2 if bi else 1
            shapes = {"data": (T, N, C), "parameters": None, "state": (L * D, N, H)}
            if mode == "lstm":
                shapes["state_cell"] = (L * D, N, H)
            add(
                "RNN",
                dict(state_size=H, num_layers=L, bidirectional=bi, mode=mode, state_outputs=so),
                shapes,
                small=True,
            )
        elif kind == "linalg":
            op = R.choice(
                [
                    "linalg_potrf",
                    "linalg_potri",
                    "linalg_trsm",
                    "linalg_trmm",
                    "linalg_syrk",
                    "linalg_sumlogdiag",
                    "linalg_gemm",
                    "linalg_inverse",
                    "linalg_det",
                    "linalg_slogdet",
                    "linalg_extractdiag",
                    "linalg_makediag",
                    "linalg_extracttrian",
                    "linalg_maketrian",
                    "linalg_gelqf",
                    "linalg_syevd",
                ]
            )
            n = R.randint(2, 4)
            if op in ("linalg_potrf", "linalg_potri", "linalg_sumlogdiag", "linalg_syevd"):
                add(op, {}, {"A": (N, n, n)}, spd=True)
            elif op in ("linalg_trsm", "linalg_trmm"):
                add(
                    op,
                    dict(
                        transpose=R.random() < 0.5,
                        rightside=R.random() < 0.5,
                        lower=R.random() < 0.5,
                        alpha=R.choice([1.0, 0.5]),
                    ),
                    {"A": (N, n, n), "B": (N, n, n)},
                    tri=True,
                )
            elif op == "linalg_syrk":
                add(
                    op,
                    dict(transpose=R.random() < 0.5, alpha=R.choice([1.0, 2.0])),
                    {"A": (N, n, n + 1)},
                )
            elif op == "linalg_gemm":
                add(
                    op,
                    dict(
                        transpose_a=R.random() < 0.5,
                        transpose_b=R.random() < 0.5,
                        alpha=1.5,
                        beta=0.5,
                    ),
                    {"A": (N, n, n), "B": (N, n, n), "C": (N, n, n)},
                )
            elif op in ("linalg_inverse", "linalg_det", "linalg_slogdet"):
                add(op, {}, {"A": (N, n, n)}, wellcond=True)
            elif op == "linalg_gelqf":
                add(op, {}, {"A": (N, n, n + 1)}, wellcond=True, no_grad=True)
            elif op in ("linalg_extractdiag", "linalg_extracttrian"):
                add(op, dict(offset=R.randint(-1, 1)), {"A": (N, n, n)})
            elif op == "linalg_makediag":
                add(op, dict(offset=R.randint(-1, 1)), {"A": (N, n)})
            else:
                add(op, dict(offset=R.randint(-1, 1)), {"A": (N, 6)})
        elif kind == "contrib":
            op = R.choice(
                [
                    "_contrib_ROIAlign",
                    "_contrib_MultiBoxPrior",
                    "_contrib_box_iou",
                    "_contrib_BilinearResize2D",
                    "_contrib_AdaptiveAvgPooling2D",
                    "_contrib_quadratic",
                    "_contrib_div_sqrt_dim",
                    "_contrib_arange_like",
                    "_contrib_index_copy",
                    "_contrib_boolean_mask",
                ]
            )
            if op == "_contrib_ROIAlign":
                add(
                    op,
                    dict(pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=R.choice([-1, 2])),
                    {"data": (1, C, 8, 8), "rois": (2, 5)},
                    rois=True,
                )
            elif op == "_contrib_MultiBoxPrior":
                add(
                    op, dict(sizes=(0.5, 0.25), ratios=(1, 2)), {"data": (1, C, 4, 5)}, no_grad=True
                )
            elif op == "_contrib_box_iou":
                add(
                    op,
                    dict(format="corner"),
                    {"lhs": (3, 4), "rhs": (2, 4)},
                    no_grad=True,
                    boxes=True,
                )
            elif op == "_contrib_BilinearResize2D":
                add(op, dict(height=R.randint(2, 9), width=R.randint(2, 9)), {"data": (N, C, 5, 6)})
            elif op == "_contrib_AdaptiveAvgPooling2D":
                add(
                    op, dict(output_size=(R.randint(1, 4), R.randint(1, 4))), {"data": (N, C, 7, 6)}
                )
            elif op == "_contrib_quadratic":
                add(op, dict(a=0.5, b=-1.0, c=2.0), {"data": (N, C)})
            elif op == "_contrib_div_sqrt_dim":
                add(op, {}, {"data": (N, C, 5)})
            elif op == "_contrib_arange_like":
                add(
                    op,
                    dict(start=1.0, step=0.5, axis=R.choice([None, 1])),
                    {"data": (N, C, 3)},
                    no_grad=True,
                )
            elif op == "_contrib_index_copy":
                add(
                    op,
                    {},
                    {"old_tensor": (5, C), "index_vector": (2,), "new_tensor": (2, C)},
                    int_input=("index_vector", 0, 4),
                    distinct=True,
                )
            else:
                continue
        elif kind == "ctc":
            L = R.randint(1, 3)
            A = R.randint(3, 5)
            add(
                "CTCLoss",
                dict(blank_label=R.choice(["first", "last"])),
                {"data": (T + 2, N, A), "label": (N, L)},
                ctc=(A, L),
            )
        else:
            op = R.choice(
                [
                    "SequenceLast",
                    "SequenceReverse",
                    "SequenceMask",
                    "Embedding",
                    "topk",
                    "where",
                    "norm",
                    "IdentityAttachKLSparseReg",
                    "BlockGrad",
                    "make_loss",
                    "Dropout",
                ]
            )
            if op == "Embedding":
                add(op, dict(input_dim=7, output_dim=3), {"data": (N, T)}, int_input=("data", 0, 6))
            elif op == "topk":
                add(op, dict(k=2, axis=-1, ret_typ="value"), {"data": (N, C + 2)})
            elif op == "where":
                add(
                    op,
                    {},
                    {"condition": (N, C), "x": (N, C), "y": (N, C)},
                    int_input=("condition", 0, 1),
                )
            elif op == "norm":
                add(op, dict(ord=2), {"data": (N, C)})
            elif op == "Dropout":
                add(op, dict(p=0.5, mode="always"), {"data": (N, C)}, skip_values=True)
            elif op.startswith("Sequence"):
                add(
                    op,
                    dict(use_sequence_length=R.random() < 0.5),
                    {"data": (T, N, C), "sequence_length": (N,)},
                    int_input=("sequence_length", 1, T),
                )
            else:
                add(op, {}, {"data": (N, C)})
    return cases
