"""print_summary prints MXNet 1.9.1's tables (tests/data/viz/summary_*.txt); plot_network needs
the optional graphviz package."""
import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import sys

import numpy as np
import pytest

import minimod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "viz")
sys.path.insert(0, HERE)
import viz_cases  # noqa: E402


def _summary(build, kwargs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        sym, shape = build(mx)
        mx.viz.print_summary(sym, shape=shape, **kwargs)
    return buf.getvalue()


@pytest.mark.parametrize("name", sorted(viz_cases.CASES))
def test_summary_matches_mxnet(name):
    with mx.name.NameManager():
        got = _summary(*viz_cases.CASES[name])
    with open(os.path.join(HERE, "summary_%s.txt" % name)) as f:
        assert got == f.read()


def test_summary_rejects_non_symbols():
    with pytest.raises(TypeError):
        mx.viz.print_summary("not a symbol")


@pytest.mark.skipif(importlib.util.find_spec("graphviz") is not None,
                    reason="graphviz is installed")
def test_plot_network_names_the_missing_package():
    sym, _ = viz_cases.mlp(mx)
    with pytest.raises(ImportError, match="graphviz"):
        mx.viz.plot_network(sym)


@pytest.mark.skipif(importlib.util.find_spec("graphviz") is None, reason="needs graphviz")
def test_plot_network_draws_layers_and_shapes():
    sym, shape = viz_cases.convnet(mx)
    dot = mx.viz.plot_network(sym, shape=shape)
    source = dot.source
    assert "Convolution\\n3x3/1, 16" in source or "Convolution\n3x3/1, 16" in source
    assert "conv1_weight" not in source
    assert "16x16x16" in source


# ---------------------------------------------------------------------------- issue 8 additions

def _total(text):
    return int(re.search(r"Total params: (\d+)", text).group(1))


@pytest.mark.parametrize("name", ["lenet", "mlp3", "mlp", "convnet"])
def test_summary_totals_equal_mxnets(name):
    """Totals recorded from MXNet 1.9.1 (tests/data/viz/gen_summary_totals.py)."""
    with open(os.path.join(HERE, "summary_totals.json")) as f:
        golden = json.load(f)[name]
    build, kwargs = viz_cases.CASES[name]
    with mx.name.NameManager():
        got = _total(_summary(build, kwargs))
        sym, shape = build(mx)
    assert got == golden["summary_total"]
    # for these networks the summary counts every learnable value, as MXNet's infer_shape does
    arg_shapes, _, _ = sym.infer_shape(**shape)
    learnable = sum(int(np.prod(s)) for n, s in zip(sym.list_arguments(), arg_shapes)
                    if n not in shape and not n.endswith("_label"))
    assert learnable == golden["learnable_arguments"] == got


def test_plot_network_without_graphviz_raises_a_clear_mxnet_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    sym, _ = viz_cases.mlp(mx)
    with pytest.raises(mx.base.MissingDependencyError,
                       match=r"plot_network needs the 'graphviz' Python package \(pip install "
                             r"'minimod\[viz\]'"):
        mx.viz.plot_network(sym)


_HAS_DOT = importlib.util.find_spec("graphviz") is not None and shutil.which("dot") is not None


@pytest.mark.skipif(not _HAS_DOT, reason="needs the graphviz package and the dot program")
def test_plot_network_renders_a_png(tmp_path):
    sym, shape = viz_cases.lenet(mx)
    dot = mx.viz.plot_network(sym, shape=shape, save_format="png", title="lenet")
    path = dot.render(filename="lenet", directory=str(tmp_path), cleanup=True)
    with open(path, "rb") as f:
        head = f.read(8)
    assert head == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) > 5000  # a drawing, not an empty canvas
    assert "Convolution\\n5x5/1, 20" in dot.source or "Convolution\n5x5/1, 20" in dot.source


def _fit_log():
    """The log lines of a short real fit, as a user's log file holds them."""
    rng = np.random.RandomState(3)
    x = rng.randn(64, 4).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=2, name="fc"),
                               name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        train = mx.io.NDArrayIter(x, y, batch_size=8)
        val = mx.io.NDArrayIter(x, y, batch_size=8)
        mod.fit(train, eval_data=val, num_epoch=3, optimizer="sgd",
                optimizer_params={"learning_rate": 0.5},
                batch_end_callback=mx.callback.Speedometer(8, frequent=2))
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    return stream.getvalue()


def test_parse_fit_log_reads_fits_own_lines(tmp_path):
    text = _fit_log()
    curves = mx.viz.parse_fit_log(text)
    assert [e for e, _ in curves["train"]["accuracy"]] == [0, 1, 2]
    assert [e for e, _ in curves["validation"]["accuracy"]] == [0, 1, 2]
    logged = re.findall(r"Epoch\[2\] Validation-accuracy=([0-9.]+)", text)
    assert curves["validation"]["accuracy"][-1][1] == float(logged[0])
    # Speedometer: batches 2, 4, 6 of each epoch, each with a speed and the metric
    assert [(e, b) for e, b, _, _ in curves["batches"]] == [
        (e, b) for e in range(3) for b in (2, 4, 6)]
    assert all(speed > 0 and "accuracy" in vals for _, _, speed, vals in curves["batches"])
    assert len(curves["time_cost"]) == 3
    log_file = tmp_path / "train.log"
    log_file.write_text(text)
    assert mx.viz.parse_fit_log(str(log_file)) == curves


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_plot_training_curve_writes_a_png(tmp_path):
    path = tmp_path / "curve.png"
    figure = mx.viz.plot_training_curve(_fit_log(), fname=str(path))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels == ["train (batches)", "train", "validation"]
    assert list(figure.axes[0].get_lines()[2].get_xdata()) == [1, 2, 3]


def test_plot_training_curve_errors(monkeypatch):
    with pytest.raises(mx.MXNetError, match="the log has no metric 'mse' \\(it has: accuracy"):
        mx.viz.plot_training_curve("Epoch[0] Train-accuracy=0.5\n", metric="mse")
    with pytest.raises(mx.MXNetError, match="the log has no 'Epoch"):
        mx.viz.plot_training_curve("nothing to see\n")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(mx.base.MissingDependencyError, match="needs matplotlib"):
        mx.viz.plot_training_curve("Epoch[0] Train-accuracy=0.5\n")


def test_progress_bar_draws_on_stderr(capsys):
    from minimod.model import BatchEndParam
    bar = mx.callback.ProgressBar(total=4, length=8, stream=sys.stderr)
    for nbatch in range(4):
        bar(BatchEndParam(epoch=1, nbatch=nbatch, eval_metric=None, locals=None))
    captured = capsys.readouterr()
    assert captured.out == ""
    frames = captured.err.split("\r")[1:]
    assert frames[0] == "Epoch[1] [==------]  25% (1/4 batches)"
    assert frames[-1] == "Epoch[1] [========] 100% (4/4 batches)\n"
    with pytest.raises(mx.MXNetError, match="total must be a positive number"):
        mx.callback.ProgressBar(total=0)
