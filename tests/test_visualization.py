"""print_summary prints MXNet 1.9.1's tables (tests/data/viz/summary_*.txt); plot_network needs
the optional graphviz package."""
import contextlib
import importlib.util
import io
import os
import sys

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
