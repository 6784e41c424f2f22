"""The graph rewrite behind `amp.convert_symbol`: MXNet 1.9.1's mixed-precision conversion.

`reduce_precision` copies a graph, node by node in MXNet's depth-first order, inserting
`amp_cast` and `amp_multicast` nodes so that the low-precision operators (float16 here) read
float16 inputs and the float32 operators read float32 ones. It tracks, for every output it has
seen, whether that output is known to be float16 ("low") or float32 ("high"), and casts only
where an input is not already known to have the type its reader wants:

- a *float32 operator* (in `fp32_ops`, or any node named in `excluded`): its outputs are high;
  each input that is not known high and is not a variable gets a cast to float32 (variables
  are taken to be float32 already);
- a *low-precision operator* (in `lp_ops`): its type inference is run with input 0 low, and its
  outputs are recorded as low or high from the result; each input not known low gets a cast
  to float16, except variables that are parameters when `cast_optional_params` is set (they
  will be stored in float16 instead), aux states (the operator updates them in place) and
  inputs the operator itself wants in another type (BatchNorm's statistics);
- a *widest-type operator* (in `widest_ops`): when the types of all its inputs are known, its
  outputs take the widest of them and the narrower inputs are cast up; otherwise one
  `amp_multicast` over all its inputs decides at run time;
- a *conditional float32 operator* (`conditional`: operator -> {parameter: values}) whose
  parameter takes one of the values: as a float32 operator, except that variables are cast too;
- any other node is copied as it is; when the type of its input 0 is known, its type
  inference with that input says what its outputs are.

Every graph output not known to be float32 finally gets a cast to float32. A cast is named
`<source node><suffix>_amp_cast_<dtype>`, the suffix being "" for a variable,
"_<output name>" for operators that declare output names in MXNet (lists/output_names.py) and
"_<output index>" for the others; an `amp_multicast` is named after its first input, with
"_amp_multicast". One cast per (output, dtype) is made and shared by all readers.

`set_param_dtypes` then writes each parameter's type into its `__dtype__` attribute as MXNet
does: by type inference over the converted graph with the data inputs float32 (unknown means
float32), and with `cast_optional_params`, a parameter whose type is still unknown but that
only feeds float16 casts becomes float16 (`_infer_unknown`).

`remove_amp_cast` (`minimod.graph.without_amp_casts`) undoes the casts for serialisation, as
MXNet's `tojson(remove_amp_cast=True)`, the default of `Symbol.tojson` and `save`, does: every
input read through an `amp_cast` or `amp_multicast` is read from its source again (graph
outputs keep theirs).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from ...base import MXNetError
from ...graph import (
    DTYPE_MX_TO_NP,
    DTYPE_NP_TO_MX,
    Entry,
    Graph,
    Node,
    topo_sort,
    without_amp_casts,
)
from ...ops.registry import create_op
from ...passes.infer import infer_graph_types
from .lists.output_names import OPS_WITH_OUTPUT_NAMES

__all__ = ["reduce_precision", "set_param_dtypes", "remove_amp_cast"]

_LOW, _HIGH = "low", "high"


def _key(entry: Entry) -> tuple:
    return (id(entry.node), entry.index)


def _suffix(entry: Entry) -> str:
    node = entry.node
    if node.op is None:
        return ""
    if node.op.name in OPS_WITH_OUTPUT_NAMES:
        return "_" + node.op.outputs()[entry.index]
    return "_%d" % entry.index


class _Rewriter:
    """One conversion: the mirror of every node and the outputs of known type."""

    def __init__(self, low: str, lp_ops, fp32_ops, widest_ops, conditional, excluded,
                 data_names, cast_optional_params):
        self.low = low
        self.low_dtype = np.dtype(low)
        self.lp_ops, self.fp32_ops, self.widest_ops = lp_ops, fp32_ops, widest_ops
        self.conditional = conditional
        self.excluded = excluded
        self.data_names = data_names
        self.cast_optional = cast_optional_params
        self.mirror: dict = {}          # id(original node) -> new node
        self.known = {_LOW: {}, _HIGH: {}}  # (id(node), index) -> Entry of the new graph

    # ---------------------------------------------------------------- helpers
    def mirrored(self, entry: Entry) -> Entry:
        return Entry(self.mirror[id(entry.node)], entry.index)

    def cast(self, entry: Entry, kind: str) -> Entry:
        """The shared cast of original `entry` to `kind`, made on first use."""
        table = self.known[kind]
        key = _key(entry)
        if key not in table:
            dtype = self.low if kind == _LOW else "float32"
            attrs = {"dtype": dtype}
            node = Node(create_op("amp_cast", attrs),
                        "%s%s_amp_cast_%s" % (entry.node.name, _suffix(entry), dtype), attrs,
                        [self.mirrored(entry)])
            table[key] = Entry(node, 0)
        return table[key]

    def record_outputs(self, node: Node, new: Node, kind: str) -> None:
        for i in range(node.num_outputs()):
            self.known[kind][(id(node), i)] = Entry(new, i)

    def record_inferred(self, node: Node, new: Node, first) -> list:
        """Run node's type inference with input 0 of dtype `first`; record the outputs found
        low or high; the inferred input types (None where unknown, or on failure)."""
        ins = [None] * len(node.inputs)
        ins[0] = first
        try:
            ins, outs = node.op.infer_type(list(ins), [None] * node.num_outputs())
        except MXNetError:
            return [None] * len(node.inputs)
        for i, t in enumerate(outs):
            if t is None:
                continue
            if np.dtype(t) == self.low_dtype:
                self.known[_LOW][(id(node), i)] = Entry(new, i)
            elif np.dtype(t) == np.float32:
                self.known[_HIGH][(id(node), i)] = Entry(new, i)
        return [None if t is None else np.dtype(t) for t in ins]

    def conditional_fp32(self, node: Node) -> bool:
        rules = self.conditional.get(node.op.name)
        if not rules or node.name in self.excluded:
            return False
        return any(node.attrs.get(param) in values for param, values in rules.items())

    # ---------------------------------------------------------------- one node
    def visit(self, node: Node) -> None:
        # the copy exists before its inputs are decided (its outputs are recorded as known
        # on the way); its inputs are filled in once, below, before anything can read it
        new = Node(node.op, node.name, dict(node.attrs))
        op_name = None if node.op is None else node.op.name
        aux = set(node.aux_input_positions())
        inputs: list = []
        if (op_name is not None and op_name in self.fp32_ops) or node.name in self.excluded:
            self.record_outputs(node, new, _HIGH)
            for e in node.inputs:
                if _key(e) in self.known[_HIGH] or e.node.op is None:
                    inputs.append(self.known[_HIGH].get(_key(e)) or self.mirrored(e))
                else:
                    inputs.append(self.cast(e, _HIGH))
        elif op_name is not None and op_name in self.lp_ops:
            wanted = self.record_inferred(node, new, self.low_dtype)
            for i, e in enumerate(node.inputs):
                if _key(e) in self.known[_LOW]:
                    inputs.append(self.known[_LOW][_key(e)])
                elif self._keeps_type(e, i, aux, wanted[i]):
                    inputs.append(self.mirrored(e))
                    if self.cast_optional and e.node.op is None:
                        self.known[_LOW][_key(e)] = self.mirrored(e)  # stored in low already
                else:
                    inputs.append(self.cast(e, _LOW))
        elif op_name is not None and op_name in self.widest_ops:
            inputs = self._widest(node, new)
        elif op_name is not None and self.conditional_fp32(node):
            self.record_outputs(node, new, _HIGH)
            for i, e in enumerate(node.inputs):
                if _key(e) in self.known[_HIGH]:
                    inputs.append(self.known[_HIGH][_key(e)])
                elif i in aux:
                    inputs.append(self.mirrored(e))
                else:
                    inputs.append(self.cast(e, _HIGH))
        else:
            if node.inputs:
                first = node.inputs[0]
                if _key(first) in self.known[_LOW]:
                    self.record_inferred(node, new, self.low_dtype)
                elif _key(first) in self.known[_HIGH]:
                    self.record_inferred(node, new, np.dtype(np.float32))
            inputs = [self.mirrored(e) for e in node.inputs]
        new.inputs = tuple(inputs)
        self.mirror[id(node)] = new

    def _keeps_type(self, e: Entry, pos: int, aux: set, wanted) -> bool:
        """Whether input `e` (slot `pos`) of a low-precision operator is read uncast."""
        if self.cast_optional and e.node.op is None and e.node.name not in self.data_names:
            return True  # a parameter, to be stored in the low type
        if pos in aux:
            return True  # updated in place by the operator: it must stay what it is
        return wanted is not None and wanted != self.low_dtype

    def _widest(self, node: Node, new: Node) -> list:
        if not node.inputs:
            raise MXNetError("amp: operator %s (node '%s') has no inputs; the symbol is "
                             "malformed" % (node.op.name, node.name))
        kinds = []
        for e in node.inputs:
            if _key(e) in self.known[_HIGH]:
                kinds.append(_HIGH)
            elif _key(e) in self.known[_LOW]:
                kinds.append(_LOW)
            else:
                kinds.append(None)
        if None in kinds:
            # the types are only known at run time: let one amp_multicast decide
            first = node.inputs[0]
            n = len(node.inputs)
            attrs = {"num_outputs": str(n)}
            multi = Node(create_op("amp_multicast", attrs),
                         "%s%s_amp_multicast" % (first.node.name, _suffix(first)), attrs,
                         [self.mirrored(e) for e in node.inputs])
            return [Entry(multi, i) for i in range(n)]
        kind = _HIGH if _HIGH in kinds else _LOW
        self.record_outputs(node, new, kind)
        return [self.known[kind][_key(e)] if _key(e) in self.known[kind] else self.cast(e, kind)
                for e in node.inputs]

    # ---------------------------------------------------------------- outputs
    def output(self, entry: Entry) -> Entry:
        if _key(entry) in self.known[_HIGH]:
            return self.known[_HIGH][_key(entry)]
        return self.cast(entry, _HIGH)


def reduce_precision(heads: Sequence[Entry], low: str, lp_ops, fp32_ops, widest_ops,
                     conditional: Mapping[str, Mapping[str, Sequence[str]]], excluded,
                     data_names, cast_optional_params: bool) -> list:
    """The output entries of the converted copy of the graph behind `heads` (see the module
    docstring). The original graph is not changed; every node of the result is new."""
    rewriter = _Rewriter(low, set(lp_ops), set(fp32_ops), set(widest_ops),
                         {op: {p: set(v) for p, v in rules.items()}
                          for op, rules in conditional.items()},
                         set(excluded), set(data_names), cast_optional_params)
    for node in topo_sort(heads):
        rewriter.visit(node)
    return [rewriter.output(e) for e in heads]


# -------------------------------------------------------------------- parameter dtypes

def _dtype_code(dtype) -> int:
    return 0 if dtype is None else DTYPE_NP_TO_MX[np.dtype(dtype)]


def _infer_unknown(graph: Graph, types: list, low: np.dtype) -> list:
    """`types` with the variables of unknown type that feed casts set to the cast's type
    (MXNet's AMPInferUnknown): an `amp_cast` gives its dtype to a variable it reads, an
    `amp_multicast` whose inputs are all variables gives them the low type. A variable asked
    for two different types keeps its inferred type."""
    result = list(types)
    chosen: dict = {}

    def claim(var: Node, dtype) -> None:
        eid = graph.row_ptr[graph.node_id[id(var)]]
        if var.name not in chosen:
            if result[eid] is None:
                chosen[var.name] = dtype
                result[eid] = dtype
        elif chosen[var.name] != dtype:
            result[eid] = types[eid]

    for node in graph.nodes:
        if node.op is None:
            continue
        if node.op.name == "amp_cast":
            src = node.inputs[0].node
            if src.op is None:
                claim(src, np.dtype(node.op.attrs.dtype))
        elif node.op.name == "amp_multicast":
            if all(e.node.op is None for e in node.inputs):
                for e in node.inputs:
                    claim(e.node, low)
    return result


def set_param_dtypes(heads: Sequence[Entry], data_names: Sequence[str],
                     model_param_names: Sequence[str], low: str,
                     cast_optional_params: bool) -> None:
    """Write `__dtype__` on the variables of the converted graph, in place, as MXNet does:
    on every model parameter when there are any, else only where a `__dtype__` was already
    set. A type inference over the converted graph, with the data inputs float32 and the
    variables' own `__dtype__` hints ignored, decides; unknown is float32 (code 0)."""
    graph = Graph.from_heads(heads)
    variables = [graph.nodes[i] for i in graph.variable_ids()]
    names = {v.name for v in variables}
    for name in data_names:
        if name not in names:
            raise MXNetError("amp: data name '%s' is not an input of the symbol (inputs: %s)"
                             % (name, ", ".join(v.name for v in variables)))
    hints = {}
    for var in variables:  # MXNet's inference here reads no __dtype__ hints
        if "__dtype__" in var.attrs:
            hints[id(var)] = var.attrs.pop("__dtype__")
    try:
        types = infer_graph_types(graph, {name: np.dtype(np.float32) for name in data_names})
    finally:
        for var in variables:
            if id(var) in hints:
                var.attrs["__dtype__"] = hints[id(var)]
    if cast_optional_params:
        types = _infer_unknown(graph, types, np.dtype(low))
    with_dtype = {name: 0 for name in data_names}
    without_dtype = {}
    for nid in graph.variable_ids():
        var = graph.nodes[nid]
        code = _dtype_code(types[graph.row_ptr[nid]])
        (with_dtype if "__dtype__" in var.attrs else without_dtype)[var.name] = code
    params = set(model_param_names)
    for var in variables:
        if params:
            if var.name in params:
                code = with_dtype.get(var.name, without_dtype.get(var.name))
                var.attrs["__dtype__"] = str(code)
        elif var.name in with_dtype and "__dtype__" in var.attrs:
            var.attrs["__dtype__"] = str(with_dtype[var.name])


def param_dtype(attrs: Mapping[str, str]) -> Optional[np.dtype]:
    """The NumPy dtype a converted variable's `__dtype__` asks for (None: none, or -1)."""
    text = attrs.get("__dtype__")
    if text is None or text == "-1":
        return None
    return np.dtype(DTYPE_MX_TO_NP[int(text)])


# -------------------------------------------------------------------- serialisation

#: the graph without its casts, what `Symbol.tojson()` writes by default (minimod.graph)
remove_amp_cast = without_amp_casts
