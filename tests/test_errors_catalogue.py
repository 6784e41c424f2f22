"""The error catalogue (docs/errors.md): every entry is triggered here and checked for its
MXNetError subclass and its exact message, and docs/errors.md must be what this file generates,
so the catalogue can never drift from what users see.

Regenerate the catalogue after adding or changing an entry:

    python -m tests.test_errors_catalogue > docs/errors.md
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import struct
import sys
import tempfile

import numpy as np
import pytest

import minimod as mx
from minimod import base
from minimod import optimizer as opt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "errors.md")


# ---------------------------------------------------------------------------- helpers

def _mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _module(bound=True):
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    if bound:
        mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
        mod.init_params()
    return mod


def _log_bound(value):
    x = mx.sym.Variable("x")
    ex = mx.sym.log(x, name="lg").simple_bind(mx.cpu(), x=(2, 3))
    ex.arg_dict["x"][:] = value
    return ex


class _Hostile:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


# ---------------------------------------------------------------------------- the catalogue
# (id, stage, error class, trigger, what it means / what to do)

def c_unknown_param():
    mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, num_hiden=5, name="fc1")


def c_missing_param():
    mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc1")


def c_bad_param_value():
    mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden="four", name="fc1")


def c_infer_shape_conflict():
    _mlp().infer_shape(data=(2, 3), fc1_weight=(4, 5))


def c_broadcast_shapes():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    (a + b).infer_shape(a=(2, 3), b=(3, 2))


def c_infer_type_conflict():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    (a + b).infer_type(a=np.float32, b=np.float64)


def c_custom_unregistered():
    mx.sym.Custom(mx.sym.Variable("data"), op_type="my_softmax", name="loss")


def c_nd_missing_input():
    mx.nd.FullyConnected(mx.nd.ones((3, 5)), num_hidden=4)


def c_nd_input_shape():
    mx.nd.FullyConnected(mx.nd.ones((3, 5)), mx.nd.ones((4, 6)), mx.nd.ones(4), num_hidden=4)


def c_autograd_inplace():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        y += 1


def c_autograd_freed():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    y.backward()
    y.backward()


def c_autograd_not_recorded():
    mx.nd.ones((2,)).backward()


def c_json_unknown_op():
    mx.sym.load_json('{"nodes": [{"op": "null", "name": "x", "inputs": []}, '
                     '{"op": "NoSuchOp", "name": "y", "inputs": [[0, 0, 0]]}], '
                     '"heads": [[1, 0, 0]]}')


def c_json_bad_entry():
    mx.sym.load_json('{"nodes": [{"op": "relu", "name": "y", "inputs": [[1, 0, 0]]}, '
                     '{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 0, 0]]}')


def c_json_not_json():
    mx.sym.load_json("{nodes: oops}")


def c_symbol_file_bad():
    with open("net-symbol.json", "w") as f:
        f.write('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[0, 3]]}')
    mx.sym.load("net-symbol.json")


def c_bind_missing_args():
    _mlp().bind(mx.cpu(), args={"data": mx.nd.ones((2, 3))})


def c_bind_other_context():
    x = mx.sym.Variable("x")
    (x * 2).bind(mx.cpu(0), {"x": mx.nd.ones((2,), ctx=mx.cpu(1))})


def c_forward_wrong_shape():
    ex = _mlp().simple_bind(mx.cpu(), data=(2, 3))
    ex.forward(data=mx.nd.ones((5, 3)))


def c_forward_unknown_arg():
    ex = _mlp().simple_bind(mx.cpu(), data=(2, 3))
    ex.forward(image=mx.nd.ones((2, 3)))


def c_backward_needs_head_grad():
    x = mx.sym.Variable("x")
    ex = mx.sym.FullyConnected(x, num_hidden=2, name="fc").simple_bind(mx.cpu(), x=(1, 3))
    ex.forward(is_train=True)
    ex.backward()


def c_param_shape():
    ex = _mlp().simple_bind(mx.cpu(), data=(2, 3))
    ex.copy_params_from({"fc1_weight": mx.nd.ones((3, 3))})


def c_module_order():
    _module(bound=False).forward(mx.io.DataBatch([mx.nd.ones((2, 3))], []))


def c_module_missing_params():
    mod = mx.mod.Module(_mlp(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(arg_params={"fc1_weight": mx.nd.ones((4, 3))}, allow_missing=False)


def c_fit_empty_iterator():
    class Empty(mx.io.DataIter):
        provide_data = [mx.io.DataDesc("data", (2, 3))]
        provide_label = [mx.io.DataDesc("softmax_label", (2,))]

        def next(self):
            raise StopIteration
    _module(bound=False).fit(Empty(), num_epoch=1)


def c_params_missing_file():
    mx.model.load_checkpoint("nothere", 3)


def c_params_truncated():
    mx.nd.save("net-0001.params", {"arg:w": mx.nd.ones((4,))})
    with open("net-0001.params", "rb") as f:
        data = f.read()
    with open("net-0001.params", "wb") as f:
        f.write(data[:-20])
    mx.nd.load("net-0001.params")


def c_params_not_ndarray_file():
    with open("notes.params", "w") as f:
        f.write("these are my notes, not parameters")
    mx.nd.load("notes.params")


def c_params_forged_count():
    data = bytearray(mx.nd.save_to_bytes({"arg:w": mx.nd.ones((2,))}))
    data[16:24] = struct.pack("<Q", 2 ** 40)
    with open("forged.params", "wb") as f:
        f.write(data)
    mx.nd.load("forged.params")


def c_params_not_regular():
    os.mkdir("ckpt.params")
    mx.nd.load("ckpt.params")


def c_params_unnamed_list():
    mx.nd.save("net-0002.params", [mx.nd.ones((2,))])
    mx.model.load_params("net", 2)


def c_save_0d():
    mx.nd.save("scalar.params", [mx.nd.array(np.float32(1.0).reshape(()))])


def c_legacy_zero_size():
    mx.nd.zeros((0, 3))


def c_simple_bind_unknown_dim():
    mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc").simple_bind(
        mx.cpu(), data=(0, 4))


def c_load_other_semantics():
    with mx.np_shape(True):
        mx.nd.save("np_shape.params", [mx.nd.ones(())])
    mx.nd.load("np_shape.params")


def c_sparse_grad_lazy():
    emb = mx.sym.Embedding(mx.sym.var("data"), input_dim=5, output_dim=2, sparse_grad=True,
                           name="emb")
    mod = mx.mod.Module(mx.sym.LinearRegressionOutput(emb, name="lro"),
                        label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (2,))], label_shapes=[("lro_label", (2, 2))])
    mod.init_params()
    mod.init_optimizer(optimizer="lars", optimizer_params={"momentum": 0.9})


def c_save_dtype():
    mx.nd.save("complex.params", [mx.nd.NDArray(np.ones(2, dtype=np.complex64), mx.cpu())])


def c_states_corrupt():
    mod = _module()
    mod.init_optimizer(optimizer="sgd")
    with open("net-0001.states", "wb") as f:
        f.write(b"\x80\x03 definitely not optimizer states")
    mod.load_optimizer_states("net-0001.states")


def c_states_hostile():
    mod = _module()
    mod.init_optimizer(optimizer="sgd")
    with open("evil.states", "wb") as f:
        f.write(pickle.dumps({0: _Hostile()}, protocol=2))
    mod.load_optimizer_states("evil.states")


def c_states_params_file():
    mod = _module()
    mod.init_optimizer(optimizer="sgd")
    mx.nd.save("wrong.states", {"arg:w": mx.nd.ones((2,))})
    mod.load_optimizer_states("wrong.states")


def c_iter_lengths():
    mx.io.NDArrayIter(np.ones((4, 2)), np.ones(3), batch_size=2)


def c_init_unknown():
    mx.init.create("gaussian")


def c_kv_uninitialized():
    kv = mx.kv.create("local")
    kv.push("w", mx.nd.ones((2,)))


def c_kv_duplicate_init():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2,)))
    kv.init("w", mx.nd.ones((2,)))


def c_kv_unknown_type():
    mx.kv.create("mesh")


def c_nan_forward():
    with mx.numerics.nan_guard(), np.errstate(invalid="ignore"):
        _log_bound(-1.0).forward()


def c_nan_backward():
    x = mx.sym.Variable("x")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.sqrt(x, name="root")), name="loss")
    ex = loss.simple_bind(mx.cpu(), x=(2,))
    with mx.numerics.nan_guard(), np.errstate(divide="ignore"):
        ex.forward(is_train=True)
        ex.backward()


def c_nan_input():
    with mx.numerics.nan_guard():
        _log_bound(np.nan).forward()


def c_nan_fit():
    x = np.ones((8, 3), dtype=np.float32)
    x[5, 1] = np.inf
    train = mx.io.NDArrayIter(x, np.zeros(8, dtype=np.float32), batch_size=2)
    with mx.numerics.nan_guard():
        _module(bound=False).fit(train, num_epoch=1)


def c_no_graphviz():
    saved = sys.modules.get("graphviz")
    sys.modules["graphviz"] = None
    try:
        mx.viz.plot_network(_mlp())
    finally:
        if saved is None:
            del sys.modules["graphviz"]
        else:
            sys.modules["graphviz"] = saved


def c_no_onnx():
    saved = sys.modules.get("onnx")
    sys.modules["onnx"] = None
    try:
        mx.onnx.export_model(_mlp(), {}, [(1, 3)], np.float32, "model.onnx")
    finally:
        if saved is None:
            del sys.modules["onnx"]
        else:
            sys.modules["onnx"] = saved


def c_no_matplotlib():
    saved = {k: sys.modules.get(k) for k in ("matplotlib", "matplotlib.figure")}
    sys.modules.update(dict.fromkeys(saved))
    try:
        mx.viz.plot_training_curve("Epoch[0] Train-accuracy=0.5\n")
    finally:
        for key, value in saved.items():
            if value is None:
                del sys.modules[key]
            else:
                sys.modules[key] = value


def c_curve_no_metric():
    mx.viz.plot_training_curve("Epoch[0] Train-accuracy=0.5\n", metric="mse")


def c_progress_total():
    mx.callback.ProgressBar(total=0)


CATALOGUE = [
    # Symbol construction and inference
    ("unknown-op-param", "Symbol", base.OpParamError, c_unknown_param,
     "A keyword the operator does not have (often a typo); the message lists the valid ones."),
    ("missing-op-param", "Symbol", base.OpParamError, c_missing_param,
     "A required operator parameter was not given."),
    ("bad-op-param", "Symbol", base.OpParamError, c_bad_param_value,
     "A parameter value that cannot be parsed as the type the operator needs."),
    ("infer-shape-conflict", "Symbol", base.ShapeError, c_infer_shape_conflict,
     "A given shape contradicts what the node's other inputs need; the message names the node, "
     "the input and both shapes."),
    ("broadcast-shapes", "Symbol", base.ShapeError, c_broadcast_shapes,
     "Elementwise operands of different shapes (use broadcast_* ops to broadcast)."),
    ("infer-type-conflict", "Symbol", base.DTypeError, c_infer_type_conflict,
     "Inputs of one node with different dtypes (cast one of them)."),
    ("custom-op-unregistered", "Symbol", base.OpParamError, c_custom_unregistered,
     "`mx.sym.Custom` (or a JSON file with a Custom node) names an op_type whose "
     "CustomOpProp was not registered in this process; import the module that registers it "
     "first."),
    # NDArray operators
    ("nd-missing-input", "NDArray operators", base.BindError, c_nd_missing_input,
     "An operator called imperatively (`mx.nd.<Operator>`) without one of its inputs: unlike "
     "a symbol, an imperative call makes no variables, so every input must be given."),
    ("nd-input-shape", "NDArray operators", base.ShapeError, c_nd_input_shape,
     "An input of an imperative call does not fit the others; the message names the input and "
     "both shapes."),
    # autograd
    ("autograd-inplace", "autograd", base.MXNetError, c_autograd_inplace,
     "An in-place write (`+=`, `x[:] = v`, `copyto`) into an array on the autograd tape while "
     "recording: the tape holds the values recorded calls read. Compute a new array instead."),
    ("autograd-graph-freed", "autograd", base.MXNetError, c_autograd_freed,
     "A second backward through a graph the first backward freed: pass `retain_graph=True` "
     "to the first one."),
    ("autograd-head-not-recorded", "autograd", base.MXNetError, c_autograd_not_recorded,
     "backward on an array that was not computed from a variable (`attach_grad`) inside "
     "`autograd.record()`."),
    # Symbol JSON
    ("json-unknown-op", "Symbol JSON", base.GraphError, c_json_unknown_op,
     "The JSON names an operator minimod does not implement."),
    ("json-bad-entry", "Symbol JSON", base.GraphError, c_json_bad_entry,
     "An input entry pointing at a node that does not come before it (corrupt or hand-edited "
     "JSON)."),
    ("json-not-json", "Symbol JSON", base.GraphError, c_json_not_json,
     "The text is not JSON at all."),
    ("symbol-file-bad", "Symbol JSON", base.GraphError, c_symbol_file_bad,
     "A symbol file whose JSON is malformed; the file is named first."),
    # Binding and running
    ("bind-missing-args", "Executor", base.BindError, c_bind_missing_args,
     "bind() needs an array for every argument."),
    ("bind-other-context", "Executor", base.BindError, c_bind_other_context,
     "bind() was given an argument on another device than the bind's, without a group2ctx "
     "that places it (MXNet refuses it too)."),
    ("forward-wrong-shape", "Executor", base.BindError, c_forward_wrong_shape,
     "forward(name=array) with a shape other than the bound one (use reshape, or a Module, "
     "which rebinds for a new batch size)."),
    ("forward-unknown-arg", "Executor", base.BindError, c_forward_unknown_arg,
     "forward() was given an array for a name the symbol does not have."),
    ("backward-needs-head-grad", "Executor", base.MXNetError, c_backward_needs_head_grad,
     "An output that is not a loss needs its head gradient passed to backward()."),
    ("param-shape", "Executor", base.BindError, c_param_shape,
     "A parameter array whose shape differs from the bound argument."),
    ("legacy-zero-size", "Executor", base.ShapeError, c_legacy_zero_size,
     "A zero-size (or 0-d) array outside NumPy shape semantics, where MXNet reads a 0 dim as "
     "unknown."),
    ("simple-bind-unknown-dim", "Executor", base.ShapeError, c_simple_bind_unknown_dim,
     "simple_bind given a dim that means unknown (0 in the legacy semantics, -1)."),
    # Module
    ("module-call-order", "Module", base.MXNetError, c_module_order,
     "Module methods called before the steps they depend on."),
    ("module-missing-params", "Module", base.MissingParamError, c_module_missing_params,
     "init_params(arg_params=...) without some parameter and allow_missing=False."),
    ("fit-empty-iterator", "Module", base.MXNetError, c_fit_empty_iterator,
     "The training iterator gave no batch (empty, or not reset)."),
    ("sparse-grad-lazy", "Module", base.MXNetError, c_sparse_grad_lazy,
     "An optimizer whose lazy row-sparse update minimod cannot reproduce for a sparse_grad "
     "embedding; the message gives the fix."),
    # Files
    ("checkpoint-missing", "Files", base.FileFormatError, c_params_missing_file,
     "load_checkpoint for an epoch or prefix with no symbol or params file."),
    ("params-truncated", "Files", base.FileFormatError, c_params_truncated,
     "A .params file cut short (copy interrupted, disk full)."),
    ("params-not-ndarray-file", "Files", base.FileFormatError, c_params_not_ndarray_file,
     "A file that is not in MXNet's NDArray format at all."),
    ("params-forged-count", "Files", base.FileFormatError, c_params_forged_count,
     "A header claiming more arrays (or bigger arrays) than the file holds: refused before "
     "anything is allocated."),
    ("params-not-regular", "Files", base.FileFormatError, c_params_not_regular,
     "A directory, FIFO or device where a file was expected (reading it could hang)."),
    ("params-unnamed-list", "Files", base.FileFormatError, c_params_unnamed_list,
     "A .params file saved from a list, so it has no arg:/aux: names."),
    ("save-0d", "Files", base.MXNetError, c_save_0d,
     "Under the legacy shape semantics MXNet's record cannot hold a 0-d array."),
    ("load-other-semantics", "Files", base.MXNetError, c_load_other_semantics,
     "A file saved under one shape semantics, loaded under the other (MXNet's rule)."),
    ("save-dtype", "Files", base.MXNetError, c_save_dtype,
     "A dtype MXNet's format has no type flag for."),
    ("states-corrupt", "Files", base.FileFormatError, c_states_corrupt,
     "A .states file that is neither minimod's format nor a readable MXNet pickle."),
    ("states-hostile", "Files", opt.UnsafeStatesError, c_states_hostile,
     "A pickled .states file that names anything but NDArray records: refused before any of "
     "it runs."),
    ("states-params-file", "Files", base.FileFormatError, c_states_params_file,
     "A .params file given where a .states file was expected."),
    # Data and initialisation
    ("iter-lengths", "Data and initialisation", mx.io.DataIterError, c_iter_lengths,
     "Data and label arrays of an NDArrayIter with different numbers of samples."),
    ("init-unknown", "Data and initialisation", mx.initializer.InitError, c_init_unknown,
     "An initializer name that is not registered."),
    # KVStore
    ("kv-uninitialized", "KVStore", base.MXNetError, c_kv_uninitialized,
     "push/pull of a key that was never init()ed."),
    ("kv-duplicate-init", "KVStore", base.MXNetError, c_kv_duplicate_init,
     "init() of a key twice."),
    ("kv-unknown-type", "KVStore", base.MXNetError, c_kv_unknown_type,
     "An unknown kvstore type name."),
    # Numerics (the opt-in NaN guard)
    ("nan-forward", "Numerics", base.NonFiniteError, c_nan_forward,
     "With mx.numerics.nan_guard on: the first node whose output holds NaN or inf."),
    ("nan-backward", "Numerics", base.NonFiniteError, c_nan_backward,
     "With the guard on: the first gradient holding NaN or inf, with the forward node and "
     "input it belongs to."),
    ("nan-input", "Numerics", base.NonFiniteError, c_nan_input,
     "With the guard on: non-finite input data or parameters, before forward."),
    ("nan-fit", "Numerics", base.NonFiniteError, c_nan_fit,
     "With the guard on, under fit: the same, prefixed with the epoch and batch."),
    # Seeing
    ("no-graphviz", "Visualization", base.MissingDependencyError, c_no_graphviz,
     "plot_network without the graphviz package (pip install 'minimod[viz]')."),
    ("no-matplotlib", "Visualization", base.MissingDependencyError, c_no_matplotlib,
     "plot_training_curve without matplotlib (parse_fit_log still works)."),
    ("curve-no-metric", "Visualization", base.MXNetError, c_curve_no_metric,
     "plot_training_curve asked for a metric the log does not have."),
    ("progress-total", "Visualization", base.MXNetError, c_progress_total,
     "ProgressBar needs a positive number of batches per epoch."),
    # Export
    ("no-onnx", "Export", base.MissingDependencyError, c_no_onnx,
     "mx.onnx.export_model without the onnx package (pip install 'minimod[onnx]'); "
     "docs/onnx.md lists what the exporter refuses and why."),
]


def trigger(fn):
    """Run one catalogue entry in a fresh temporary working directory; return the error."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            with mx.name.NameManager(), contextlib.redirect_stdout(io.StringIO()):
                fn()
        except Exception as err:  # noqa: BLE001 - the catalogue records whatever is raised
            return err
        finally:
            os.chdir(old)
    return None


def render() -> str:
    """docs/errors.md, generated from CATALOGUE by running every entry."""
    lines = [
        "# Errors a user can cause, and what they print",
        "",
        "Every error minimod raises for bad input or misuse is an `MXNetError` (so "
        "`except mx.base.MXNetError` catches all of them), of a subclass that says which stage "
        "objected. Each entry below shows the class and the exact message, produced by running "
        "the entry's trigger in `tests/test_errors_catalogue.py`, which also checks every "
        "entry (regenerate this file with `python -m tests.test_errors_catalogue > "
        "docs/errors.md`).",
        "",
        "| class | base classes | raised for |",
        "|---|---|---|",
    ]
    classes = []
    for _, _, cls, _, _ in CATALOGUE:
        if cls not in classes:
            classes.append(cls)
    for cls in classes:
        bases = ", ".join(b.__name__ for b in cls.__mro__[1:] if b not in (object,
                                                                           BaseException))
        summary = " ".join(line.strip() for line in
                           (cls.__doc__ or "").strip().split("\n\n")[0].splitlines())
        lines.append("| `%s` | %s | %s |" % (cls.__name__, bases, summary))
    stage = None
    for entry_id, entry_stage, cls, fn, meaning in CATALOGUE:
        if entry_stage != stage:
            stage = entry_stage
            lines += ["", "## %s" % stage]
        err = trigger(fn)
        lines += ["", "### `%s`: %s" % (entry_id, cls.__name__), "", meaning, "", "```",
                  str(err), "```"]
    lines += [
        "",
        "## Errors that keep MXNet's Python exception types",
        "",
        "Where MXNet 1.9.1's Python front end raises `ValueError`, `TypeError`, "
        "`AssertionError` or `NotImplementedError` (metric and lr_scheduler arguments, "
        "`Module(work_load_list=...)` of the wrong length, `fit` without `num_epoch`, "
        "unsupported MXNet features), minimod raises the same type, with a message that names "
        "the argument, so code that catches those keeps working.",
        "",
    ]
    return "\n".join(lines)


@pytest.mark.parametrize("entry", CATALOGUE, ids=[e[0] for e in CATALOGUE])
def test_catalogued_error(entry):
    entry_id, _, cls, fn, _ = entry
    err = trigger(fn)
    assert err is not None, "%s raised nothing" % entry_id
    assert type(err) is cls, "%s raised %s: %s" % (entry_id, type(err).__name__, err)
    assert isinstance(err, base.MXNetError)
    with open(DOC) as f:
        doc = f.read()
    documented = doc.split("### `%s`: %s\n" % (entry_id, cls.__name__), 1)
    assert len(documented) == 2, "docs/errors.md lacks %s" % entry_id
    quoted = documented[1].split("```\n", 1)[1].split("\n```", 1)[0]
    assert str(err) == quoted


def test_docs_errors_md_is_current():
    with open(DOC) as f:
        assert f.read() == render()


def test_catalogue_ids_are_unique():
    ids = [e[0] for e in CATALOGUE]
    assert len(ids) == len(set(ids))


if __name__ == "__main__":
    sys.stdout.write(render())
