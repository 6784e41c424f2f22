"""`mx.viz`: a Keras-style layer table (`print_summary`), a graphviz drawing (`plot_network`),
and training curves read back from `fit`'s log (`parse_fit_log`, `plot_training_curve`).

Both read the symbol's JSON, so they see the graph exactly as MXNet's versions do, and print
the same table: parameter counts follow MXNet's rules, including its quirks (FullyConnected and
Convolution count input channels from the first non-batch axis of their inputs' shapes;
BatchNorm counts only gamma and beta, and only when shapes are given; the node listed first, and
any node that shares an id with the first head entry, shows as a layer).
"""
from __future__ import annotations

import copy
import json
import os
import re
import warnings
from typing import Any, Optional, Sequence

from .base import MissingDependencyError, MXNetError
from .symbol import Symbol

__all__ = ["print_summary", "plot_network", "parse_fit_log", "plot_training_curve"]


def _str2tuple(text: str) -> list:
    """The digits groups of a tuple attribute such as '(3, 3)'."""
    return re.findall(r"\d+", text)


def _shape_dict(symbol: Symbol, shape: dict) -> dict:
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError("Input shape is incomplete")
    return dict(zip(internals.list_outputs(), out_shapes))


def _print_row(fields: Sequence[Any], positions: Sequence[int]) -> None:
    line = ""
    for field, stop in zip(fields, positions):
        line += str(field)
        line = line[:stop]
        line += " " * (stop - len(line))
    print(line)


def _layer_params(node: dict, pre_filter: int, shape_dict: Optional[dict]) -> int:
    """Parameter count of one layer by MXNet's summary rules."""
    op, attrs = node["op"], node.get("attrs", {})
    no_bias = attrs.get("no_bias") == "True"
    if op == "Convolution":
        count = pre_filter * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _str2tuple(attrs["kernel"]):
            count *= int(k)
        return count if no_bias else count + int(attrs["num_filter"])
    if op == "FullyConnected":
        return (pre_filter if no_bias else pre_filter + 1) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        if shape_dict is None:
            return 0
        return int(shape_dict[node["name"] + "_output"][1]) * 2
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(symbol: Symbol, shape: Optional[dict] = None, line_length: int = 120,
                  positions: Sequence[float] = (.44, .64, .74, 1.)) -> None:
    """Print one row per layer: name(op), output shape, parameter count, input layers.

    `shape` maps input names to shapes (as for infer_shape) and enables the shape column.
    `positions` are the column ends, as fractions of `line_length` or as absolute columns.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    shape_dict = None if shape is None else _shape_dict(symbol, shape)
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    # MXNet takes the set of the first head entry's [node, index, version] numbers; kept so the
    # same rows appear.
    heads = set(conf["heads"][0])
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print("_" * line_length)
    _print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions)
    print("=" * line_length)

    def shown_shape(node: dict) -> list:
        if shape_dict is None:
            return []
        key = node["name"] if node["op"] == "null" else node["name"] + "_output"
        return list(shape_dict[key][1:]) if key in shape_dict else []

    def layer_row(node: dict, out_shape: list) -> int:
        previous = []
        pre_filter = 0
        if node["op"] != "null":
            for item in node["inputs"]:
                source = nodes[item[0]]
                if source["op"] != "null" or item[0] in heads:
                    previous.append(source["name"])
                    in_shape = shown_shape(source)
                    if in_shape:
                        pre_filter += int(in_shape[0])
        count = _layer_params(node, pre_filter, shape_dict)
        _print_row([node["name"] + "(" + node["op"] + ")", "x".join(str(x) for x in out_shape),
                    count, previous[0] if previous else ""], positions)
        for name in previous[1:]:
            _print_row(["", "", "", name], positions)
        return count

    total_params = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        listed = node["op"] != "null" or i in heads
        total_params += layer_row(node, shown_shape(node) if listed else [])
        print("=" * line_length if i == len(nodes) - 1 else "_" * line_length)
    print("Total params: {params}".format(params=total_params))
    print("_" * line_length)


_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")


def _node_style(node: dict) -> tuple:
    """(label, fillcolor) of an op node in the drawing."""
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
        return ("Convolution\n{}/{}, {}".format("x".join(_str2tuple(attrs["kernel"])), stride,
                                                attrs["num_filter"]), _COLORS[1])
    if op == "FullyConnected":
        return "FullyConnected\n{}".format(attrs["num_hidden"]), _COLORS[1]
    if op == "BatchNorm":
        return node["name"], _COLORS[3]
    if op == "Activation":
        return "Activation\n{}".format(attrs["act_type"]), _COLORS[2]
    if op == "LeakyReLU":
        return "LeakyReLU\n{}".format(attrs.get("act_type", "Leaky")), _COLORS[2]
    if op == "Pooling":
        kernel = "x".join(_str2tuple(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
        return "Pooling\n{}, {}/{}".format(attrs["pool_type"], kernel, stride), _COLORS[4]
    if op in ("Concat", "Flatten", "Reshape"):
        return node["name"], _COLORS[5]
    if op == "Softmax":
        return node["name"], _COLORS[6]
    if op == "Custom":
        return attrs["op_type"], _COLORS[7]
    return node["name"], _COLORS[7]


def _edge_key(node: dict) -> str:
    """The internals output name that carries the value drawn on an edge from `node`."""
    if node["op"] == "null":
        return node["name"]
    key = node["name"] + "_output"
    num_outputs = node.get("attrs", {}).get("num_outputs")
    if num_outputs is not None:
        key += str(int(num_outputs) - 1)
    return key


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: Optional[dict] = None, dtype: Optional[dict] = None,
                 node_attrs: Optional[dict] = None, hide_weights: bool = True) -> Any:
    """The symbol as a `graphviz.Digraph` (needs the `graphviz` Python package).

    Edges point from a layer back to its inputs and, with `shape` (and `dtype`), are labelled
    with the input's shape without the batch axis (and its type). Weight-like variables
    are hidden unless `hide_weights=False`.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise MissingDependencyError(
            "plot_network needs the 'graphviz' Python package (pip install 'minimod[viz]' or "
            "pip install graphviz), and the Graphviz 'dot' program to render") from None
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be a Symbol")
    shape_dict = None if shape is None else _shape_dict(symbol, shape)
    type_dict = None
    if dtype is not None:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise ValueError("Input type is incomplete")
        type_dict = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [node["name"] for node in nodes]
    if len(names) != len(set(names)):
        repeated = sorted({name for name in names if names.count(name) > 1})
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning)
    base_attr = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                 "style": "filled"}
    base_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attr = copy.deepcopy(base_attr)
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node["name"])
                continue
            attr["shape"] = "oval"
            label, attr["fillcolor"] = node["name"], _COLORS[0]
        else:
            label, attr["fillcolor"] = _node_style(node)
        dot.node(name=node["name"], label=label, **attr)
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" \
            else node["inputs"]
        for item in inputs:
            source = nodes[item[0]]
            if source["name"] in hidden:
                continue
            attr = {"dir": "back", "arrowtail": "open", "label": ""}
            key = _edge_key(source)
            if shape_dict is not None:
                attr["label"] = "x".join(str(x) for x in shape_dict[key][1:])
            if type_dict is not None:
                attr["label"] += "(" + type_dict[key].__name__ + ")"
            dot.edge(tail_name=node["name"], head_name=source["name"], **attr)
    return dot


# ---------------------------------------------------------------------------- training curves

_EPOCH_VALUE = re.compile(r"Epoch\[(\d+)\] (Train|Validation)-([^=\s]+)=([-+0-9.eE]+|nan|inf)")
_BATCH_LINE = re.compile(r"Epoch\[(\d+)\] Batch \[(\d+)-(\d+)\]\tSpeed: ([0-9.eE+-]+|inf) "
                         r"samples/sec((?:\t[^=\t]+=[^\t]+)*)")
_TIME_COST = re.compile(r"Epoch\[(\d+)\] Time cost=([0-9.eE+-]+)")


def parse_fit_log(log: str | os.PathLike) -> dict:
    """The numbers in a `fit` log (text, or the path of a log file).

    Reads the lines `fit`, `Speedometer` and `LogValidationMetricsCallback` write (with any
    logging prefix in front): returns `{"train": {metric: [(epoch, value)]}, "validation":
    {metric: [(epoch, value)]}, "batches": [(epoch, last_batch, samples_per_sec, {metric:
    value})], "time_cost": [(epoch, seconds)]}`. Lines it does not know are ignored.
    """
    text = os.fspath(log)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    curves: dict = {"train": {}, "validation": {}, "batches": [], "time_cost": []}
    for line in text.splitlines():
        match = _EPOCH_VALUE.search(line)
        if match:
            epoch, kind, name, value = match.groups()
            curves[kind.lower()].setdefault(name, []).append((int(epoch), float(value)))
            continue
        match = _BATCH_LINE.search(line)
        if match:
            epoch, _first, last, speed, rest = match.groups()
            values = {}
            for field in rest.split("\t")[1:]:
                name, _, value = field.partition("=")
                try:
                    values[name] = float(value)
                except ValueError:
                    continue
            curves["batches"].append((int(epoch), int(last), float(speed), values))
            continue
        match = _TIME_COST.search(line)
        if match:
            curves["time_cost"].append((int(match.group(1)), float(match.group(2))))
    return curves


def plot_training_curve(log: str | os.PathLike, metric: Optional[str] = None,
                        fname: Optional[str | os.PathLike] = None, title: str = "training") -> Any:
    """Plot a metric per epoch (train and validation) from a `fit` log, with the per-batch
    values Speedometer logged in between; returns the matplotlib Figure and, with `fname`,
    saves it there (the format follows the extension). Needs matplotlib (the `viz` extra).

    `metric` defaults to the first metric the log names. MXNetError when the log has none.
    """
    curves = parse_fit_log(log)
    names = list(curves["train"]) + [n for n in curves["validation"] if n not in curves["train"]]
    names += [n for b in curves["batches"] for n in b[3] if n not in names]
    if not names:
        raise MXNetError("plot_training_curve: the log has no 'Epoch[n] Train-<metric>=', "
                         "'Validation-' or Speedometer lines to plot")
    metric = names[0] if metric is None else metric
    if metric not in names:
        raise MXNetError("plot_training_curve: the log has no metric %r (it has: %s)"
                         % (metric, ", ".join(names)))
    try:
        from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state
    except ImportError:
        raise MissingDependencyError(
            "plot_training_curve needs matplotlib (pip install 'minimod[viz]' or pip install "
            "matplotlib); parse_fit_log gives the numbers without it") from None
    figure = Figure(figsize=(6, 4))
    axes = figure.add_subplot(1, 1, 1)
    batches = [(e, b, vals[metric]) for e, b, _, vals in curves["batches"] if metric in vals]
    if batches:
        per_epoch = {}
        for epoch, batch, _ in batches:
            per_epoch[epoch] = max(per_epoch.get(epoch, 0), batch)
        xs = [epoch + batch / (per_epoch[epoch] + 1.0) for epoch, batch, _ in batches]
        axes.plot(xs, [v for _, _, v in batches], ".", alpha=0.4, label="train (batches)")
    for kind, style in (("train", "o-"), ("validation", "s-")):
        points = curves[kind].get(metric, [])
        if points:
            axes.plot([e + 1 for e, _ in points], [v for _, v in points], style, label=kind)
    axes.set_xlabel("epoch")
    axes.set_ylabel(metric)
    axes.set_title(title)
    axes.legend()
    if fname is not None:
        figure.savefig(os.fspath(fname))
    return figure
