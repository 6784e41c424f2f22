"""`mx.sym.contrib.foreach`: a loop over axis 0 of symbols, written as a Python function over
one step, built into a `_foreach` node whose body is a graph of its own (see
minimod/ops/control_flow.py for the node, minimod/passes/control_flow.py for its unrolling).

How the body graph is made, as MXNet 1.9.1 makes it (so the JSON is MXNet's):
- `body` runs once, inside `AttrScope(__subgraph_name__=<foreach0>)`, on fresh variables that
  stand for one step of each data array and for each loop state (named `<symbol>-<output
  index>`: `data-0`, `h0-0`); every node it creates carries that attribute.
- A body output that is one of those variables, or a node made outside the body, goes
  through `identity`, so the body's outputs are its own nodes.
- Where the body reads a node made outside it, the body reads a new variable named after that
  entry's output (`fc0_output`) and the loop takes the entry as an input; variables made
  outside (weights) stay variables of the body and inputs of the loop.

The symbolic `while_loop` and `cond` are built from ordinary operators instead
(control_flow_masked.py); the imperative forms are in minimod/ndarray/control_flow.py.
"""
from __future__ import annotations

import itertools
from typing import Any

from ..base import MXNetError, flatten_nested
from ..base import regroup_nested as _regroup
from ..graph import Entry, Graph, Node
from ..ops.registry import create_op
from .naming import AttrScope, current_attr_scope, current_name_manager
from .symbol import Symbol, Variable, make_op_symbol

__all__ = ["foreach"]


class UnusedLoopInput(MXNetError, AssertionError):
    """A foreach body that does not read one of its data arrays or states. MXNet checks this
    with `assert`, so code that catches AssertionError catches this too."""

_SCOPE_KEY = "__subgraph_name__"


def _flatten(value: Any, what: str) -> tuple:
    """flatten_nested over Symbols, each of one output."""
    flat, layout = flatten_nested(value, Symbol, what)
    grouped = next((s for s in flat if len(s._outputs) != 1), None)
    if grouped is not None:
        raise MXNetError("%s: a grouped Symbol of %d outputs; give a list of Symbols"
                         % (what, len(grouped._outputs)))
    return flat, layout


def _subgraph_name(name: str) -> str:
    """`name` with a count (foreach0, foreach1 ...), prefixed by the enclosing body's name
    and '$' inside another loop, as MXNet names its subgraphs."""
    outer = current_attr_scope().get(None).get(_SCOPE_KEY, "")
    if outer:
        name = outer + "$" + name
    count = AttrScope._subgraph_names[name]
    AttrScope._subgraph_names[name] += 1
    return "%s%d" % (name, count)


def _stand_in(sym: Symbol) -> Symbol:
    entry = sym._outputs[0]
    return Variable("%s-%d" % (entry.node.name, entry.index))


def _cut(heads: list, scope: str) -> tuple:
    """(the body graph over `heads`, {body variable name: outer entry} for what the body
    takes from outside): nodes without the scope's attribute that are not variables are cut
    off, each entry read through a new variable named after its output."""
    inside: dict = {}   # id(node) -> the body's copy (variables: themselves)
    outer: dict = {}    # cut variable name -> outer entry
    cut_vars: dict = {}  # outer Entry -> its variable node

    def body_entry(e: Entry) -> Entry:
        node = e.node
        if node.op is None or node.attrs.get(_SCOPE_KEY) == scope:
            return Entry(inside[id(node)], e.index)
        if e not in cut_vars:
            name = node.op.output_names(node.name)[e.index] if node.name else "%s_output" % e
            cut_vars[e] = Node(None, name)
            outer[name] = e
        return Entry(cut_vars[e], 0)

    order = Graph.from_heads(heads).nodes  # topological: inputs before readers
    for node in order:
        if node.op is None:
            inside[id(node)] = node
        elif node.attrs.get(_SCOPE_KEY) == scope:
            inside[id(node)] = Node(node.op, node.name, node.attrs,
                                    [body_entry(e) for e in node.inputs])
    return Graph.from_heads([Entry(inside[id(e.node)], e.index) for e in heads]), outer


def _locs(text_list: list) -> str:
    return "[%s]" % ", ".join(str(v) for v in text_list)


def foreach(body, data, init_states, name: str = "foreach"):
    """Run `body(step_data, states) -> (outputs, new_states)` over axis 0 of `data` (a Symbol
    or a nested list of Symbols sliced together), starting from `init_states`; returns
    (the outputs stacked along a new axis 0, the states after the last step), in the
    structures `body` returned."""
    flat_data, data_layout = _flatten(data, "foreach's data")
    flat_states, state_layout = _flatten(init_states, "foreach's init_states")
    scope = _subgraph_name(name)
    with AttrScope(**{_SCOPE_KEY: scope}):
        data_vars = [_stand_in(s) for s in flat_data]
        state_vars = [_stand_in(s) for s in flat_states]
        outs, new_states = body(_regroup(list(data_vars), data_layout),
                                _regroup(list(state_vars), state_layout))
        flat_out, out_layout = _flatten(outs, "foreach's body outputs")
        flat_new, new_layout = _flatten(new_states, "foreach's body states")
        if new_layout != state_layout:
            raise MXNetError("foreach: the body returns states laid out as %s for "
                             "init_states laid out as %s" % (new_layout, state_layout))
        heads = _own_outputs(flat_out, flat_new, scope)
    graph, cut = _cut(heads, scope)
    data_locs, state_locs, remain_locs, remain = _placement(graph, cut, data_vars, state_vars)
    inputs = [s._outputs[0] for s in itertools.chain(flat_data, flat_states)] + remain
    attrs = current_attr_scope().get(None)
    attrs.update(num_args=str(len(inputs) + 1), num_outputs=str(len(heads)),
                 num_out_data=str(len(flat_out)), in_state_locs=_locs(state_locs),
                 in_data_locs=_locs(data_locs), remain_locs=_locs(remain_locs))
    op = create_op("_foreach", attrs)
    op.subgraphs = (graph,)
    node = Node(op, current_name_manager().get(None, "_foreach"), attrs, inputs)
    results = [Symbol([Entry(node, i)]) for i in range(len(heads))]
    return (_regroup(results[:len(flat_out)], out_layout),
            _regroup(results[len(flat_out):], state_layout))


def _placement(graph: Graph, cut: dict, data_vars: list, state_vars: list) -> tuple:
    """Where the data and state stand-ins are among the body's variables, where the other
    variables are, and the loop input each of those reads (a cut entry, or the variable)."""
    variables = [graph.nodes[i] for i in graph.variable_ids()]
    names = [v.name for v in variables]
    if len(set(names)) != len(names):
        raise MXNetError("foreach: the body's inputs do not have distinct names: %s" % names)

    def loc(sym: Symbol, what: str) -> int:
        name = sym._outputs[0].node.name
        if name not in names:
            raise UnusedLoopInput("foreach: the body does not use %s %s" % (what, name))
        return names.index(name)
    data_locs = [loc(s, "the data") for s in data_vars]
    state_locs = [loc(s, "the loop state") for s in state_vars]
    taken = set(data_locs) | set(state_locs)
    remain_locs = [i for i in range(len(names)) if i not in taken]
    remain = [cut.get(names[i], Entry(variables[i], 0)) for i in remain_locs]
    return data_locs, state_locs, remain_locs, remain


def _own_outputs(outs: list, states: list, scope: str) -> list:
    """The body's output entries, each a node of the body's own: an output that is a
    variable, a node made outside the body, or (for a state) also an output, goes through
    `identity` (made inside the scope)."""
    heads, seen = [], set()
    for k, sym in enumerate(outs + states):
        e = sym._outputs[0]
        foreign = e.node.op is None or e.node.attrs.get(_SCOPE_KEY) != scope
        if foreign or (k >= len(outs) and e in seen):
            e = make_op_symbol("identity", [sym], {}, hint="identity")._outputs[0]
        seen.add(e)
        heads.append(e)
    return heads
