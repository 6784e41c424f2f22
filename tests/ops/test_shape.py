"""Shape operators: table-driven forward/gradient checks plus shape-inference and error tests.

Reshape shapes in RESHAPE_CODES were checked against MXNet 1.9.1 (`mx.sym.Reshape(...)
.infer_shape`).
"""
from __future__ import annotations

import numpy as np
import pytest

from minimod.base import OpParamError, ShapeError
from minimod.ops.registry import create_op, get_op_class
from tests.ops.harness import Case, check_case, infer

RNG = np.random.RandomState(0)


def rand(*shape):
    return RNG.uniform(-1, 1, shape)


X = rand(2, 3, 4)

# (codes, reverse, input shape, MXNet's output shape)
RESHAPE_CODES = [
    ((0, -1), False, (2, 3, 4), (2, 12)),
    ((-1, 0), False, (2, 3, 4), (8, 3)),
    ((2, -1, 0), False, (2, 3, 4), (2, 3, 4)),
    ((-2,), False, (2, 3, 4), (2, 3, 4)),
    ((0, -2), False, (2, 3, 4), (2, 3, 4)),
    ((-2, 1, 1), False, (2, 3, 4), (2, 3, 4, 1, 1)),
    ((-1, -2), False, (2, 3, 4), (2, 3, 4)),
    ((-3, 4), False, (2, 3, 4), (6, 4)),
    ((-3, -2), False, (2, 3, 4), (6, 4)),
    ((0, -3), False, (2, 3, 4), (2, 12)),
    ((-3, -3), False, (2, 3, 4, 5), (6, 20)),
    ((-4, 1, 2, -2), False, (2, 3, 4), (1, 2, 3, 4)),
    ((0, -4, -1, 1, 0), False, (2, 3, 4), (2, 3, 1, 4)),
    ((-4, -1, 2, -2), False, (4, 3, 5), (2, 2, 3, 5)),
    ((-4, 2, 2, -2), False, (4, 3, 5), (2, 2, 3, 5)),
    ((-1,), False, (2, 3, 4), (24,)),
    ((1, 2, 3, 4), False, (2, 3, 4), (1, 2, 3, 4)),
    ((-1, 0), True, (10, 5, 4), (50, 4)),
    ((0, -1), True, (10, 5, 4), (5, 40)),
    ((-3, 0), True, (2, 3, 4), (6, 4)),
    ((2, -1), True, (2, 3, 4), (2, 12)),
]

RESHAPE_ERRORS = [
    ((-4, 3, 2, -2), (4, 3, 5)),    # split dims do not divide
    ((-4, -1, -1, -2), (4, 3, 5)),  # both split dims inferred
    ((-1, -1), (2, 3, 4)),          # two inferred dims
    ((0, 0, 0, 0), (2, 3, 4)),      # copies more dims than there are
    ((-2, -3), (2, 3, 4)),          # nothing left to merge
    ((7, -1), (2, 3, 4)),           # 24 is not a multiple of 7
    ((5, 5), (2, 3, 4)),            # size differs
    # 0 copies input dim 1 (the 6 consumed dim 0): MXNet's infer_shape says (6, 3), then fails
    ((6, 0), (2, 3, 4)),
    ((4, 0, 0), (2, 3, 4)),         # MXNet's infer_shape: (4, 3, 4)
    ((5, -1), (2, 3, 4)),           # MXNet's infer_shape: (5, 4) (24 // 5)
]


def reshape_case(codes, reverse, shape, want):
    x = rand(*shape)
    attrs = {"shape": codes, "reverse": reverse}
    return Case("Reshape", attrs, [x], lambda a: [a.reshape(want)],
                id="Reshape%s%s" % (codes, "-rev" if reverse else ""))


def split_ref(n, axis, squeeze):
    def ref(a):
        parts = np.split(a, n, axis=axis)
        return [np.squeeze(p, axis=axis) for p in parts] if squeeze else parts
    return ref


def seq_time_major(a, axis):
    return a if axis == 0 else a.swapaxes(0, 1)


def seq_mask_ref(axis, value):
    def ref(a, lengths):
        out = seq_time_major(a.copy(), axis)
        for n, length in enumerate(lengths.astype(int)):
            out[length:, n] = value
        return [seq_time_major(out, axis)]
    return ref


def seq_last_ref(axis):
    def ref(a, lengths):
        tm = seq_time_major(a, axis)
        return [np.stack([tm[int(length) - 1, n] for n, length in enumerate(lengths)])]
    return ref


def seq_reverse_ref(axis):
    def ref(a, lengths):
        out = seq_time_major(a.copy(), axis)
        tm = seq_time_major(a, axis)
        for n, length in enumerate(lengths.astype(int)):
            out[:length, n] = tm[:length, n][::-1]
        return [seq_time_major(out, axis)]
    return ref


LENGTHS = np.array([2.0, 4.0, 1.0])   # batch 3, up to 4 steps

CASES = [reshape_case(*row) for row in RESHAPE_CODES] + [
    Case("Reshape", {"target_shape": (0, 4)}, [X], lambda a: [a.reshape(6, 4)],
         id="Reshape-target_shape"),
    Case("Reshape", {"target_shape": (4, 0), "keep_highest": True}, [X],
         lambda a: [a.reshape(2, 12)], id="Reshape-keep_highest"),
    Case("reshape", {"shape": (4, -1)}, [X], lambda a: [a.reshape(4, 6)], id="reshape-alias"),
    Case("Flatten", {}, [rand(2, 3, 4, 5)], lambda a: [a.reshape(2, 60)]),
    Case("flatten", {}, [rand(5)], lambda a: [a.reshape(5, 1)], id="flatten-1d"),
    Case("transpose", {}, [X], lambda a: [a.transpose()]),
    Case("transpose", {"axes": (1, 2, 0)}, [X], lambda a: [a.transpose(1, 2, 0)],
         id="transpose-axes"),
    Case("transpose", {"axes": (-1, 0, 1)}, [X], lambda a: [a.transpose(2, 0, 1)],
         id="transpose-negative"),
    Case("expand_dims", {"axis": 1}, [X], lambda a: [a[:, None]]),
    Case("expand_dims", {"axis": -1}, [X], lambda a: [a[..., None]], id="expand_dims-last"),
    Case("squeeze", {}, [rand(1, 3, 1, 4)], lambda a: [a.reshape(3, 4)]),
    Case("squeeze", {"axis": (0, -1)}, [rand(1, 3, 1)], lambda a: [a.reshape(3)],
         id="squeeze-axes"),
    Case("squeeze", {}, [rand(1, 1)], lambda a: [a.reshape(1)], id="squeeze-all"),
    Case("SwapAxis", {"dim1": 0, "dim2": 2}, [X], lambda a: [a.swapaxes(0, 2)]),
    Case("swapaxes", {"dim1": -1, "dim2": 1}, [X], lambda a: [a.swapaxes(2, 1)],
         id="swapaxes-negative"),
    Case("Concat", {"num_args": 3}, [rand(2, 3, 4), rand(2, 1, 4), rand(2, 5, 4)],
         lambda a, b, c: [np.concatenate([a, b, c], 1)]),
    Case("concat", {"num_args": 2, "dim": -1}, [rand(2, 3, 4), rand(2, 3, 5)],
         lambda a, b: [np.concatenate([a, b], -1)], id="concat-last"),
    Case("SliceChannel", {"num_outputs": 2, "axis": -1}, [X], split_ref(2, -1, False)),
    Case("split", {"num_outputs": 3}, [X], split_ref(3, 1, False), id="split-default-axis"),
    Case("split", {"num_outputs": 3, "axis": 1, "squeeze_axis": True}, [X],
         split_ref(3, 1, True), id="split-squeeze"),
    Case("slice_axis", {"axis": -1, "begin": -3, "end": -1}, [X], lambda a: [a[..., 1:3]]),
    Case("slice_axis", {"axis": 1, "begin": 1, "end": None}, [X], lambda a: [a[:, 1:]],
         id="slice_axis-to-end"),
    Case("slice", {"begin": (None, 1), "end": (None, None), "step": (None, 2)}, [X],
         lambda a: [a[:, 1::2]]),
    Case("slice", {"begin": (None, None, 3), "end": (None, None, 0), "step": (1, 1, -1)}, [X],
         lambda a: [a[:, :, 3:0:-1]], id="slice-negative-step"),
    Case("crop", {"begin": (0, -10), "end": (5, 10)}, [X], lambda a: [a], id="crop-clipped"),
    Case("stack", {"num_args": 2, "axis": -1}, [rand(2, 3), rand(2, 3)],
         lambda a, b: [np.stack([a, b], -1)]),
    Case("stack", {"num_args": 3}, [rand(2, 3), rand(2, 3), rand(2, 3)],
         lambda a, b, c: [np.stack([a, b, c])], id="stack-3"),
    Case("tile", {"reps": (2, 1, 3)}, [X], lambda a: [np.tile(a, (2, 1, 3))]),
    Case("tile", {"reps": (2,)}, [X], lambda a: [np.tile(a, 2)], id="tile-short-reps"),
    Case("tile", {"reps": (2, 1, 1, 2)}, [X], lambda a: [np.tile(a, (2, 1, 1, 2))],
         id="tile-long-reps"),
    Case("repeat", {"repeats": 2}, [X], lambda a: [np.repeat(a, 2)]),
    Case("repeat", {"repeats": 3, "axis": -1}, [X], lambda a: [np.repeat(a, 3, -1)],
         id="repeat-axis"),
    Case("reshape_like", {}, [X, rand(4, 6)], lambda a, b: [a.reshape(4, 6)]),
    Case("reshape_like", {"lhs_begin": 0, "lhs_end": 2, "rhs_begin": 0, "rhs_end": 1},
         [X, rand(6, 5)], lambda a, b: [a.reshape(6, 4)], id="reshape_like-ranges"),
    Case("Pad", {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1),
                 "constant_value": 1.5}, [rand(1, 2, 3, 4)],
         lambda a: [np.pad(a, ((0, 0), (0, 0), (1, 2), (2, 1)), constant_values=1.5)]),
    Case("pad", {"mode": "edge", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1)}, [rand(1, 2, 3, 4)],
         lambda a: [np.pad(a, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="edge")], id="pad-edge"),
    Case("Pad", {"mode": "reflect", "pad_width": (0, 0, 0, 0, 2, 1, 1, 3)}, [rand(1, 2, 3, 4)],
         lambda a: [np.pad(a, ((0, 0), (0, 0), (2, 1), (1, 3)), mode="reflect")],
         id="Pad-reflect"),
    Case("SequenceMask", {"use_sequence_length": True, "value": -1.0},
         [rand(4, 3, 2), LENGTHS], seq_mask_ref(0, -1.0), grad_wrt=[0]),
    Case("SequenceMask", {"use_sequence_length": True, "axis": 1},
         [rand(3, 4, 2), LENGTHS], seq_mask_ref(1, 0.0), grad_wrt=[0], id="SequenceMask-axis1"),
    Case("SequenceMask", {}, [rand(4, 3)], lambda a: [a], id="SequenceMask-no-lengths"),
    Case("SequenceLast", {"use_sequence_length": True}, [rand(4, 3, 2), LENGTHS],
         seq_last_ref(0), grad_wrt=[0]),
    Case("SequenceLast", {"use_sequence_length": True, "axis": 1}, [rand(3, 4), LENGTHS],
         seq_last_ref(1), grad_wrt=[0], id="SequenceLast-axis1"),
    Case("SequenceLast", {}, [rand(4, 3, 2)], lambda a: [a[-1]], id="SequenceLast-no-lengths"),
    Case("SequenceReverse", {"use_sequence_length": True}, [rand(4, 3, 2), LENGTHS],
         seq_reverse_ref(0), grad_wrt=[0]),
    Case("SequenceReverse", {}, [rand(4, 3)], lambda a: [a[::-1]],
         id="SequenceReverse-no-lengths"),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_op(case, ctx):
    check_case(case, ctx)


def test_mxnet_sequence_values():
    """SequenceReverse / SequenceLast / SequenceMask values printed by MXNet 1.9.1."""
    x = np.arange(12.0).reshape(4, 3)
    lengths = np.array([2.0, 4.0, 1.0])

    def run(name, attrs, inputs):
        op = create_op(name, attrs)
        _, outs = infer(op, [a.shape for a in inputs])
        out = [np.empty(outs[0])]
        op.forward(np, inputs, [], out, False)
        return out[0].ravel()

    np.testing.assert_array_equal(
        run("SequenceReverse", {"use_sequence_length": True}, [x, lengths]),
        [3, 10, 2, 0, 7, 5, 6, 4, 8, 9, 1, 11])
    np.testing.assert_array_equal(
        run("SequenceLast", {"use_sequence_length": True, "axis": 1},
            [np.arange(12.0).reshape(3, 4), lengths]), [1, 7, 8])
    np.testing.assert_array_equal(
        run("SequenceLast", {"use_sequence_length": True}, [x, np.array([0.0, 4, 1])]),
        [0, 10, 2])
    np.testing.assert_array_equal(
        run("SequenceMask", {"use_sequence_length": True, "value": -1},
            [x, np.array([0.0, 4, 1.7])]),
        [-1, 1, 2, -1, 4, -1, -1, 7, -1, -1, 10, -1])


# ----------------------------------------------------------------------------- shape inference

def shapes(name, attrs, in_shapes, out_shapes=None):
    op = create_op(name, attrs)
    ins = list(in_shapes)
    outs = list(out_shapes) if out_shapes is not None else [None] * op.num_outputs()
    for _ in range(2):
        ins, outs = op.infer_shape(ins, outs)
    return ins, outs


@pytest.mark.parametrize("codes,dshape", RESHAPE_ERRORS)
def test_reshape_errors(codes, dshape):
    with pytest.raises(ShapeError):
        shapes("Reshape", {"shape": codes}, [dshape])


def test_reshape_unknown_batch():
    assert shapes("Reshape", {"shape": (0, -1)}, [(None, 3, 4)])[1] == [(None, 12)]
    assert shapes("Reshape", {"shape": (-1, 12)}, [(None, 3, 4)])[1] == [(None, 12)]
    assert shapes("Reshape", {"shape": (-3, 4)}, [(None, 3, 4)])[1] == [(None, 4)]
    assert shapes("Reshape", {"shape": (6, 4)}, [None])[1] == [(6, 4)]


def test_reshape_backward_inference():
    ins, outs = shapes("Reshape", {"shape": (-1, 12)}, [(None, 3, 4)], [(5, 12)])
    assert ins == [(5, 3, 4)] and outs == [(5, 12)]
    ins, _ = shapes("Reshape", {}, [(2, None, 4)], [(24,)])
    assert ins == [(2, 3, 4)]
    ins, _ = shapes("Flatten", {}, [(None, 3, 4)], [(7, 12)])
    assert ins == [(7, 3, 4)]
    ins, _ = shapes("Flatten", {}, [(7, None, 4)], [(7, 12)])
    assert ins == [(7, 3, 4)]


def test_concat_inference():
    # a single unknown input: its concat dim from the output, the rest from its siblings
    ins, outs = shapes("Concat", {"num_args": 3}, [(2, 3, 4), None, (2, 5, 4)], [(2, 10, 4)])
    assert ins[1] == (2, 2, 4) and outs == [(2, 10, 4)]
    ins, outs = shapes("Concat", {"num_args": 2, "dim": 0}, [(None, 3), (4, None)])
    assert ins == [(None, 3), (4, 3)] and outs == [(None, 3)]
    with pytest.raises(ShapeError, match="arg1"):
        shapes("Concat", {"num_args": 2}, [(2, 3, 4), (2, 3, 5)])
    assert create_op("Concat", {"num_args": 3}).arguments() == ["arg0", "arg1", "arg2"]


def test_concat_backward_skipped_gradients():
    op = create_op("Concat", {"num_args": 3, "dim": 1})
    og = rand(2, 9)
    first, last = np.empty((2, 2)), np.empty((2, 4))
    op.backward(np, [og], [None] * 3, [None], [first, None, last], [])
    np.testing.assert_array_equal(first, og[:, :2])
    np.testing.assert_array_equal(last, og[:, 5:])


def test_split_inference_and_outputs():
    op = create_op("SliceChannel", {"num_outputs": 3, "axis": 1, "squeeze_axis": True})
    assert op.outputs() == ["output0", "output1", "output2"]
    assert op.output_names("s") == ["s_output0", "s_output1", "s_output2"]
    ins, outs = shapes("split", {"num_outputs": 2, "axis": 0}, [None], [(3, 4), None])
    assert ins == [(6, 4)] and outs == [(3, 4), (3, 4)]
    with pytest.raises(ShapeError, match="data"):
        shapes("split", {"num_outputs": 2}, [(2, 3, 4)])
    with pytest.raises(ShapeError, match="data"):
        shapes("split", {"num_outputs": 2, "axis": 1, "squeeze_axis": True}, [(2, 4, 3)])


def test_split_missing_head_gradient_is_zero():
    op = create_op("SliceChannel", {"num_outputs": 2, "axis": 0})
    g = np.full((4, 3), np.nan)
    head = rand(2, 3)
    op.backward(np, [head, None], [None], [None, None], [g], [])
    np.testing.assert_array_equal(g[:2], head)
    np.testing.assert_array_equal(g[2:], 0)


def test_sequence_length_inference():
    ins, _ = shapes("SequenceMask", {"use_sequence_length": True}, [(5, 3, 2), None])
    assert ins[1] == (3,)
    ins, _ = shapes("SequenceLast", {"use_sequence_length": True, "axis": 1}, [(None, 5), (4,)])
    assert ins[0] == (4, 5)
    assert create_op("SequenceMask", {}).arguments() == ["data"]
    assert create_op("SequenceMask", {"use_sequence_length": True}).arguments() == [
        "data", "sequence_length"]


@pytest.mark.parametrize("name,attrs,in_shapes,slot", [
    ("transpose", {"axes": (1, 0)}, [(2, 3, 4)], "data"),
    ("expand_dims", {"axis": 4}, [(2, 3, 4)], "rank"),
    ("squeeze", {"axis": 1}, [(1, 3, 1)], "data"),
    ("slice_axis", {"axis": 1, "begin": 2, "end": 1}, [(2, 3, 4)], "data"),
    ("slice_axis", {"axis": 1, "begin": 0, "end": 5}, [(2, 3, 4)], "data"),
    ("stack", {"num_args": 2}, [(2, 3), (2, 4)], "arg1"),
    ("reshape_like", {}, [(2, 3, 4), (5, 5)], "lhs"),
    ("Pad", {"mode": "reflect", "pad_width": (0, 0, 3, 0)}, [(2, 3)], "data"),
    ("SequenceMask", {"use_sequence_length": True}, [(4, 3), (5,)], "sequence_length"),
])
def test_bad_shapes(name, attrs, in_shapes, slot):
    with pytest.raises(ShapeError, match=slot):
        shapes(name, attrs, in_shapes)


def test_set_out_conflict_names_slot():
    with pytest.raises(ShapeError, match="output"):
        shapes("Flatten", {}, [(2, 3, 4)], [(2, 13)])


@pytest.mark.parametrize("name,attrs", [
    ("Reshape", {"shape": (2, -5)}),
    ("Reshape", {"shape": (2, 3), "bogus": 1}),
    ("transpose", {"axes": (0, 0, 1)}),
    ("expand_dims", {}),
    ("Concat", {}),
    ("Concat", {"num_args": 0}),
    ("SliceChannel", {"num_outputs": 0}),
    ("slice_axis", {"axis": 0, "begin": 0}),
    ("slice", {"begin": (0,), "end": (1, 2)}),
    ("slice", {"begin": (0,), "end": (1,), "step": (0,)}),
    ("tile", {"reps": (0, 1)}),
    ("repeat", {"repeats": -1}),
    ("Pad", {"mode": "wrap", "pad_width": (0, 0)}),
    ("Pad", {"mode": "edge", "pad_width": (0, 0, 1)}),
    ("SequenceMask", {"axis": 2}),
])
def test_bad_params(name, attrs):
    with pytest.raises(OpParamError):
        create_op(name, attrs)


def test_aliases_and_contract_flags():
    for alias, name in [("flatten", "Flatten"), ("reshape", "Reshape"), ("swapaxes", "SwapAxis"),
                        ("concat", "Concat"), ("split", "SliceChannel"), ("crop", "slice"),
                        ("pad", "Pad")]:
        assert get_op_class(alias).name == name
    for name in ("Reshape", "Flatten", "expand_dims"):
        cls = get_op_class(name)
        assert cls.inplace == ((0, 0),)
        assert cls.backward_inputs == () and cls.backward_outputs == ()


def test_inplace_forward_writes_out():
    """With out aliasing the input storage, Reshape/Flatten/expand_dims still fill `out`."""
    for name, attrs, shape in [("Reshape", {"shape": (6, 4)}, (6, 4)),
                               ("Flatten", {}, (2, 12)), ("expand_dims", {"axis": 0},
                                                          (1, 2, 3, 4))]:
        x = X.copy()
        out = x.reshape(shape)
        create_op(name, attrs).forward(np, [x], [], [out], True)
        np.testing.assert_array_equal(out.ravel(), X.ravel())
        separate = np.full(shape, np.nan)
        create_op(name, attrs).forward(np, [X], [], [separate], True)
        np.testing.assert_array_equal(separate.ravel(), X.ravel())
