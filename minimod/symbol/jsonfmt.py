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
from .graph import Entry, Graph, Node
from .naming import HIDDEN_KEYS

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
    node_texts = []
    for nid, node in enumerate(graph.nodes):
        aux_positions = set(node.aux_input_positions())
        entries = []
        for pos, e in enumerate(node.inputs):
            src = graph.node_id[id(e.node)]
            entries.append((src, e.index, 1 if pos in aux_positions else 0))
        fields = ['      "op": %s' % _s(node.op_name), '      "name": %s' % _s(node.name)]
        if node.attrs:
            fields.append('      "attrs": %s' % _attrs_text(node.attrs, 6))
        fields.append('      "inputs": %s' % _entries(entries, 6))
        node_texts.append("    {\n%s\n    }" % ", \n".join(fields))
    heads = [(graph.node_id[id(e.node)], e.index, 0) for e in graph.outputs]
    arg_nodes = graph.variable_ids()
    row_ptr = [0]
    for node in graph.nodes:
        row_ptr.append(row_ptr[-1] + (1 if node.op is None else node.op.num_json_outputs()))
    parts = [
        '  "nodes": [\n%s\n  ]' % ", \n".join(node_texts),
        '  "arg_nodes": %s' % _int_array(arg_nodes, 2),
        '  "node_row_ptr": %s' % _int_array(row_ptr, 2),
        '  "heads": %s' % _entries(heads, 2),
        '  "attrs": {"mxnet_version": ["int", %d]}' % MXNET_VERSION,
    ]
    return "{\n%s\n}" % ", \n".join(parts)


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
                raise GraphError("%s: attribute %s has a non-string value %r" % (where, k, v))
            if legacy and k in HIDDEN_KEYS:
                k = "__%s__" % k
            attrs[k] = v
    return attrs


def graph_from_json(text: str) -> tuple:
    """Output entries of the graph described by MXNet symbol JSON `text`."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise GraphError("symbol JSON does not parse: %s" % err) from None
    if not isinstance(doc, dict) or "nodes" not in doc or "heads" not in doc:
        raise GraphError("symbol JSON must be an object with 'nodes' and 'heads'")
    version = None
    top_attrs = doc.get("attrs") or {}
    if "mxnet_version" in top_attrs:
        version = top_attrs["mxnet_version"][1]
    legacy = version is None or version < 900
    nodes: list = []
    for nid, spec in enumerate(doc["nodes"]):
        where = "node %d (%s)" % (nid, spec.get("name", "?"))
        op_name = spec.get("op")
        name = spec.get("name")
        if op_name is None or name is None:
            raise GraphError("%s: missing 'op' or 'name'" % where)
        attrs = _node_attrs(spec, legacy, where)
        inputs = []
        for raw in spec.get("inputs", []):
            if not isinstance(raw, list) or len(raw) not in (2, 3):
                raise GraphError("%s: input entry %r is not [node, index(, version)]"
                                 % (where, raw))
            src, index = int(raw[0]), int(raw[1])
            if not 0 <= src < nid:
                raise GraphError("%s: input refers to node %d, which does not come before it"
                                 % (where, src))
            inputs.append(Entry(nodes[src], index))
        if op_name == "null":
            nodes.append(Node(None, name, attrs))
            continue
        try:
            op = create_op(op_name, attrs)
        except MXNetError as err:
            raise GraphError("%s: %s" % (where, err)) from None
        slots = op.arguments() + op.aux_states()
        if len(inputs) > len(slots):
            raise GraphError("%s: %s takes %d inputs, the JSON gives %d"
                             % (where, op.name, len(slots), len(inputs)))
        for slot in slots[len(inputs):]:  # legacy files omit aux-state variables
            inputs.append(Entry(Node(None, "%s_%s" % (name, slot), dict(attrs)), 0))
        nodes.append(Node(op, name, attrs, inputs))
    heads = []
    for raw in doc["heads"]:
        src, index = int(raw[0]), int(raw[1])
        if not 0 <= src < len(nodes):
            raise GraphError("head %r refers to a missing node" % (raw,))
        heads.append(Entry(nodes[src], index))
    return tuple(heads)
