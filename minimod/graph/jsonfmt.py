"""MXNet's symbol JSON: write it as MXNet 1.9.1 does, read it in its current and legacy forms.

The writer reproduces MXNet's layout (dmlc's JSON writer): objects with more than one key and
arrays longer than ten items are spread over lines, everything else stays on one line,
items are separated by ", ". Attribute maps are written with sorted keys.

The reader accepts what MXNet 1.9.1 accepts: input entries of two or three numbers, missing
`node_row_ptr`, missing `mxnet_version` (a legacy file: plain `ctx_group`/`lr_mult`... keys
become hidden `__key__` attributes), per-node `attr`/`param` instead of `attrs`, and op nodes
that lack their trailing aux-state inputs (they get fresh variables, as MXNet's upgrader does).
"""
from __future__ import annotations

import json

from ..base import GraphError, MXNetError
from ..ops.registry import create_op
from ..shape_semantics import is_np_shape, np_shape
from .attrs import HIDDEN_KEYS, parse_shape_attr
from .graph import Entry, Graph, Node

__all__ = ["graph_to_json", "graph_from_json", "MXNET_VERSION"]

MXNET_VERSION = 10901


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _attrs_text(attrs: dict, indent: int) -> str:
    items = sorted(attrs.items())
    if len(items) == 1:
        return "{%s: %s}" % (_s(items[0][0]), _s(items[0][1]))
    pad = " " * (indent + 2)
    body = ", \n".join("%s%s: %s" % (pad, _s(k), _s(v)) for k, v in items)
    return "{\n%s\n%s}" % (body, " " * indent)


def _int_array(values, indent: int) -> str:
    values = list(values)
    if len(values) <= 10:
        return "[%s]" % ", ".join(str(v) for v in values)
    pad = " " * (indent + 2)
    return "[\n%s\n%s]" % (", \n".join(pad + str(v) for v in values), " " * indent)


def _entries(entries, indent: int) -> str:
    """A list of [node, index, version] entries; over ten entries go one per line."""
    entries = ["[%d, %d, %d]" % e for e in entries]
    if len(entries) <= 10:
        return "[%s]" % ", ".join(entries)
    pad = " " * (indent + 2)
    return "[\n%s\n%s]" % (", \n".join(pad + e for e in entries), " " * indent)


def graph_to_json(graph: Graph) -> str:
    return _graph_text(graph, 0, top=True)


def _graph_text(graph: Graph, base: int, top: bool) -> str:
    """The JSON object of `graph`, its opening brace at column `base` (a subgraph, written
    inside its node's "subgraphs" list, has no top-level "attrs")."""
    node_texts = []
    for nid, node in enumerate(graph.nodes):
        aux_positions = set(node.aux_input_positions())
        entries = []
        for pos, e in enumerate(node.inputs):
            src = graph.node_id[id(e.node)]
            entries.append((src, e.index, 1 if pos in aux_positions else 0))
        pad = " " * (base + 6)
        fields = ['%s"op": %s' % (pad, _s(node.op_name)), '%s"name": %s' % (pad, _s(node.name))]
        if node.attrs:
            fields.append('%s"attrs": %s' % (pad, _attrs_text(node.attrs, base + 6)))
        fields.append('%s"inputs": %s' % (pad, _entries(entries, base + 6)))
        if node.op is not None and node.op.subgraphs:
            subs = ", \n".join(" " * (base + 8) + _graph_text(g, base + 8, top=False)
                               for g in node.op.subgraphs)
            fields.append('%s"subgraphs": [\n%s\n%s]' % (pad, subs, pad))
        node_texts.append("%s{\n%s\n%s}" % (" " * (base + 4), ", \n".join(fields),
                                            " " * (base + 4)))
    heads = [(graph.node_id[id(e.node)], e.index, 0) for e in graph.outputs]
    arg_nodes = graph.variable_ids()
    row_ptr = [0]
    for node in graph.nodes:
        row_ptr.append(row_ptr[-1] + (1 if node.op is None else node.op.num_json_outputs()))
    pad = " " * (base + 2)
    parts = [
        '%s"nodes": [\n%s\n%s]' % (pad, ", \n".join(node_texts), pad),
        '%s"arg_nodes": %s' % (pad, _int_array(arg_nodes, base + 2)),
        '%s"node_row_ptr": %s' % (pad, _int_array(row_ptr, base + 2)),
        '%s"heads": %s' % (pad, _entries(heads, base + 2)),
    ]
    if top:
        parts.append(_top_attrs(pad))
    return "{\n%s\n%s}" % (", \n".join(parts), " " * base)


def _top_attrs(pad: str) -> str:
    """The graph's own attributes; a graph written under NumPy shapes says so (its 0 dims are
    sizes), and MXNet spreads that two-key object over lines."""
    if not is_np_shape():
        return '%s"attrs": {"mxnet_version": ["int", %d]}' % (pad, MXNET_VERSION)
    return ('%s"attrs": {\n%s  "is_np_shape": ["int", 1], \n%s  "mxnet_version": ["int", %d]\n%s}'
            % (pad, pad, pad, MXNET_VERSION, pad))


def _node_attrs(spec: dict, legacy: bool, where: str) -> dict:
    attrs: dict = {}
    for key in ("param", "attr", "attrs"):
        part = spec.get(key)
        if part is None:
            continue
        if not isinstance(part, dict):
            raise GraphError("%s: '%s' must be an object" % (where, key))
        for k, v in part.items():
            if not isinstance(v, str):
                raise GraphError("%s: attribute %s has a non-string value %.80r" % (where, k, v))
            if legacy and k in HIDDEN_KEYS:
                k = "__%s__" % k
            attrs[k] = v
    return attrs


def _entry(raw, nodes: list, limit: int, where: str) -> Entry:
    """An input or head entry `[node, index(, version)]` referring to one of `nodes[:limit]`."""
    if (not isinstance(raw, list) or len(raw) not in (2, 3)
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in raw)):
        raise GraphError("%s: entry %.80r is not [node, index(, version)] of integers"
                         % (where, raw))
    src, index = raw[0], raw[1]
    if not 0 <= src < limit:
        raise GraphError("%s: entry refers to node %d, which does not come before it"
                         % (where, src))
    num_outputs = nodes[src].num_outputs()
    if not 0 <= index < num_outputs:
        raise GraphError("%s: entry asks for output %d of node '%s', which has %d"
                         % (where, index, nodes[src].name, num_outputs))
    return Entry(nodes[src], index)


def _parse(text) -> dict:
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise GraphError("symbol JSON is not UTF-8 text (%s)" % err) from None
    if not isinstance(text, str):
        raise GraphError("symbol JSON must be a str, got %s" % type(text).__name__)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise GraphError("symbol JSON does not parse: %s" % err) from None
    except (ValueError, RecursionError) as err:  # a number too long, nesting too deep
        raise GraphError("symbol JSON does not parse: %s" % err) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or \
            not isinstance(doc.get("heads"), list):
        raise GraphError("symbol JSON must be an object with lists 'nodes' and 'heads'")
    return doc


def _version(doc: dict):
    top_attrs = doc.get("attrs") or {}
    if not isinstance(top_attrs, dict):
        raise GraphError("symbol JSON: top-level 'attrs' must be an object")
    if "mxnet_version" not in top_attrs:
        return None
    tagged = top_attrs["mxnet_version"]
    if (not isinstance(tagged, list) or len(tagged) != 2 or not isinstance(tagged[1], int)
            or isinstance(tagged[1], bool)):
        raise GraphError("symbol JSON: 'mxnet_version' must be [\"int\", N], got %.80r"
                         % (tagged,))
    return tagged[1]


def _subgraphs(specs, legacy: bool, where: str) -> tuple:
    """A node's subgraphs: each a graph object as at the top level (nodes, heads ...)."""
    if not isinstance(specs, list) or not all(isinstance(g, dict) and isinstance(
            g.get("nodes"), list) and isinstance(g.get("heads"), list) for g in specs):
        raise GraphError("%s: 'subgraphs' must be a list of graphs with 'nodes' and 'heads'"
                         % where)
    graphs = []
    for k, doc in enumerate(specs):
        nodes: list = []
        for nid, spec in enumerate(doc["nodes"]):
            nodes.append(_node(spec, nid, nodes, legacy))
        heads = [_entry(raw, nodes, len(nodes), "%s, subgraph %d, head %d" % (where, k, h))
                 for h, raw in enumerate(doc["heads"])]
        if not heads:
            raise GraphError("%s: subgraph %d has no heads" % (where, k))
        graphs.append(Graph.from_heads(heads))
    return tuple(graphs)


def graph_from_json(text: str) -> tuple:
    """Output entries of the graph described by MXNet symbol JSON `text`.

    Anything malformed raises GraphError saying which node or entry is at fault; nothing in
    the text is executed (op names are looked up in the registry, attributes are parsed as
    data).
    """
    doc = _parse(text)
    version = _version(doc)
    legacy = version is None or version < 900
    nodes: list = []
    for nid, spec in enumerate(doc["nodes"]):
        nodes.append(_node(spec, nid, nodes, legacy))
    if is_np_shape() and "is_np_shape" not in (doc.get("attrs") or {}):
        _unknown_dims_as_numpy(nodes)
    if not doc["heads"]:
        raise GraphError("symbol JSON: 'heads' is empty (a symbol needs an output)")
    return tuple(_entry(raw, nodes, len(nodes), "head %d" % k)
                 for k, raw in enumerate(doc["heads"]))


def _unknown_dims_as_numpy(nodes: list) -> None:
    """Loading, under NumPy shapes, a graph written under the legacy ones: the 0 dims its
    variables declare meant "unknown", so they become -1 (written as MXNet writes them)."""
    for node in nodes:
        text = node.attrs.get("__shape__") if node.op is None else None
        if text:
            with np_shape(False):  # the file's own, legacy semantics
                dims = parse_shape_attr(text)
            if dims is not None:
                node.attrs["__shape__"] = "[%s]" % ",".join(
                    "-1" if d is None else str(d) for d in dims)


def _node(spec, nid: int, nodes: list, legacy: bool) -> Node:
    """Node `nid` of the JSON, reading entries of the `nodes` before it."""
    if not isinstance(spec, dict):
        raise GraphError("node %d: must be an object, got %.80r" % (nid, spec))
    op_name = spec.get("op")
    name = spec.get("name")
    where = "node %d (%.80s)" % (nid, name if isinstance(name, str) else "?")
    if not isinstance(op_name, str) or not isinstance(name, str):
        raise GraphError("%s: 'op' and 'name' must be strings" % where)
    attrs = _node_attrs(spec, legacy, where)
    raw_inputs = spec.get("inputs", [])
    if not isinstance(raw_inputs, list):
        raise GraphError("%s: 'inputs' must be a list" % where)
    inputs = [_entry(raw, nodes, nid, where) for raw in raw_inputs]
    if op_name == "null":
        if inputs:
            raise GraphError("%s: a variable ('null' op) cannot have inputs" % where)
        return Node(None, name, attrs)
    try:
        op = create_op(op_name, attrs)
    except MXNetError as err:
        raise GraphError("%s: %s" % (where, err)) from None
    except (ValueError, TypeError, KeyError, OverflowError) as err:
        raise GraphError("%s: bad attributes for %s (%s: %s)"
                         % (where, op_name, type(err).__name__, err)) from None
    subgraphs = spec.get("subgraphs")
    if subgraphs is not None:
        op.subgraphs = _subgraphs(subgraphs, legacy, where)
    elif op.name == "_foreach":
        raise GraphError("%s: a _foreach node needs its body under 'subgraphs'" % where)
    slots = op.arguments() + op.aux_states()
    if len(inputs) > len(slots):
        raise GraphError("%s: %s takes %d inputs, the JSON gives %d"
                         % (where, op.name, len(slots), len(inputs)))
    for slot in slots[len(inputs):]:  # legacy files omit aux-state variables
        inputs.append(Entry(Node(None, "%s_%s" % (name, slot), dict(attrs)), 0))
    return Node(op, name, attrs, inputs)
