"""Composition: calling a symbol with other symbols, `net(data=other)`, as MXNet composes.

Two cases, as in MXNet: a symbol whose free variables are replaced by the given symbols (by
position in argument order, or by input name), or an "atomic" symbol (an operator node made
by `Symbol._gen_atomic_symbol`, waiting for its inputs) applied to them. Both give the output
entries of the composed graph; the nodes of the inputs are shared, not copied.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..graph import Entry, Node, substitute

__all__ = ["composed", "is_atomic"]


def is_atomic(outputs: Sequence[Entry]) -> bool:
    """Whether `outputs` are those of one operator node still waiting for its inputs."""
    node = outputs[0].node
    return (node.op is not None and not node.inputs and node.op.num_inputs() > 0
            and all(out.node is node for out in outputs))


def composed(symbol, args: Sequence, kwargs: dict, name: Optional[str]) -> tuple:
    """The output entries of `symbol` composed with the symbols `args` or `kwargs` (inputs
    are symbols of `symbol`'s class); `name` renames the head node."""
    if args and kwargs:
        raise TypeError("compose takes positional or keyword symbols, not both")
    if is_atomic(symbol._outputs):
        return _apply_atomic(symbol._outputs[0].node, args, kwargs, name, type(symbol))
    arg_names = symbol.list_arguments()
    if args:
        if len(args) > len(arg_names):
            raise TypeError("compose got %d symbols but the symbol has %d arguments"
                            % (len(args), len(arg_names)))
        replace = dict(zip(arg_names, args))
    else:
        unknown = [k for k in kwargs if k not in symbol.list_inputs()]
        if unknown:
            raise TypeError("cannot compose: %s not among the symbol's inputs %s"
                            % (unknown, symbol.list_inputs()))
        replace = kwargs
    for key, value in replace.items():
        if not isinstance(value, type(symbol)) or len(value._outputs) != 1:
            raise TypeError("compose: %s must be a single-output Symbol" % key)
    outputs = substitute(symbol._graph, {k: v._outputs[0] for k, v in replace.items()})
    if name is not None and len(outputs) == 1 and outputs[0].node.op is not None:
        head = outputs[0]
        renamed = Node(head.node.op, name, head.node.attrs, head.node.inputs)
        outputs = (Entry(renamed, head.index),)
    return outputs


def _apply_atomic(node: Node, args: Sequence, kwargs: dict, name: Optional[str],
                  symbol_class: type) -> tuple:
    """Output entries of a new node running `node`'s op on the given input symbols
    (positional in slot order, or by slot name); slots not given become variables
    `<name>_<slot>`, as for an op constructor."""
    op = node.op
    slots = op.arguments() + op.aux_states()
    if len(args) > len(slots):
        raise TypeError("%s takes %d inputs (%s), got %d"
                        % (op.name, len(slots), ", ".join(slots), len(args)))
    given = dict(zip(slots, args))
    for key, value in kwargs.items():
        if key not in slots:
            raise TypeError("%s has no input named '%s' (inputs: %s)"
                            % (op.name, key, ", ".join(slots)))
        given[key] = value
    name = node.name if name is None else name
    entries = []
    for slot in slots:
        value = given.get(slot)
        if value is None:
            entries.append(Entry(Node(None, "%s_%s" % (name, slot), dict(node.attrs)), 0))
            continue
        if not isinstance(value, symbol_class) or len(value._outputs) != 1:
            raise TypeError("compose: input '%s' of %s must be a single-output Symbol"
                            % (slot, op.name))
        entries.append(value._outputs[0])
    applied = Node(op, name, node.attrs, entries)
    return tuple(Entry(applied, i) for i in range(applied.num_visible_outputs()))
