"""`Symbol`: the user's handle on a graph, with MXNet's API.

A Symbol is a tuple of output entries (`minimod.graph`); the nodes behind them are shared with
every other symbol built from them. Building (`Variable`, op constructors, arithmetic, `Group`)
happens here, composition in compose.py; inference and binding are delegated down the pipeline
(`minimod.passes` through inference.py, `minimod.executor`), which works on the graph records
and never imports this package, so the arrows point one way. Those imports are made inside the
methods, so that `import minimod` does not load the compiler and the executor.
"""
from __future__ import annotations

import numbers
import warnings
from typing import Optional, Sequence

import numpy as np

from ..base import MXNetError, NotImplementedForSymbol, atomic_write
from ..graph import (
    AMP_CASTS,
    DTYPE_NP_TO_MX,
    HIDDEN_KEYS,
    Entry,
    Graph,
    Node,
    graph_from_json,
    graph_to_json,
    hidden_key,
    without_amp_casts,
)
from ..graph.attrs import STYPE_CODES
from ..ops.registry import (
    call_arguments,
    call_params,
    create_op,
    get_op_class,
    param_text,
    shape_is_known,
)
from ..shape_semantics import api_shape_out, is_np_shape
from .compose import composed, is_atomic
from .fluent import FLUENT_METHODS
from .inference import inferred_shapes, inferred_types
from .naming import current_attr_scope, current_name_manager

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "make_op_symbol"]

def _not_for_symbol(name: str, alias: Optional[str] = None):
    """A Symbol method that raises NotImplementedForSymbol (an NDArray-only operation)."""
    def method(self, *args, **kwargs):
        raise NotImplementedForSymbol(name, alias, *args)
    method.__name__ = name
    return method


class Symbol:
    """A handle on one or more output entries of a graph."""

    __slots__ = ("_outputs", "_graph_cache", "__weakref__")

    def __init__(self, outputs: Sequence[Entry]):
        self._outputs = tuple(outputs)
        self._graph_cache = None

    # ------------------------------------------------------------------ structure
    @property
    def _graph(self) -> Graph:
        if self._graph_cache is None:
            self._graph_cache = Graph.from_heads(self._outputs)
        return self._graph_cache

    @property
    def name(self) -> Optional[str]:
        """Name of the head node, or None for a group of several outputs."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0].node.name

    def __len__(self):
        return len(self.list_outputs())

    def __iter__(self):
        return (self[i] for i in range(len(self._outputs)))

    def __repr__(self):
        if len(self._outputs) == 1:
            return "<Symbol %s>" % self.name
        return "<Symbol group [%s]>" % ", ".join(self.list_outputs())

    def __copy__(self):
        return Symbol(self._outputs)

    def __deepcopy__(self, memo):
        return load_json(self.tojson())

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        other = load_json(state["handle"])
        self._outputs = other._outputs
        self._graph_cache = None

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self._outputs))[index]])
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if len(hits) != 1:
                raise ValueError("there are %d outputs named %r (outputs: %s)"
                                 % (len(hits), index, ", ".join(names)))
            index = hits[0]
        if not isinstance(index, int):
            raise TypeError("Symbol index must be an int, a str or a slice, not %r" % (index,))
        if index < 0:
            index += len(self._outputs)
        if not 0 <= index < len(self._outputs):
            raise IndexError("Symbol has %d outputs, index %d is out of range"
                             % (len(self._outputs), index))
        return Symbol([self._outputs[index]])

    def list_arguments(self) -> list:
        g = self._graph
        return [g.nodes[i].name for i in g.argument_ids()]

    def list_auxiliary_states(self) -> list:
        g = self._graph
        return [g.nodes[i].name for i in g.aux_ids()]

    def list_inputs(self) -> list:
        g = self._graph
        return [g.nodes[i].name for i in g.variable_ids()]

    def list_outputs(self) -> list:
        names = []
        for e in self._outputs:
            node = e.node
            if node.op is None:
                names.append(node.name)
            elif not node.name:  # an unnamed atomic symbol: the bare slot names, as MXNet
                names.append(node.op.outputs()[e.index])
            else:
                names.append(node.op.output_names(node.name)[e.index])
        return names

    def get_internals(self) -> "Symbol":
        """A group of every visible output of every node, variables included, in graph order."""
        entries = []
        for node in self._graph.nodes:
            entries.extend(Entry(node, i) for i in range(node.num_visible_outputs()))
        return Symbol(entries)

    def get_children(self) -> Optional["Symbol"]:
        """The inputs of the head node(s) as a group; None for a variable.

        Each head node counts once, in order of first appearance (the outputs of a
        SliceChannel share one node, whose inputs are listed once); the inputs themselves are
        not deduplicated (`a + a` has children [a, a]), as in MXNet.
        """
        nodes = {id(out.node): out.node for out in self._outputs}
        entries = [e for node in nodes.values() for e in node.inputs]
        if not entries:
            return None
        return Symbol(entries)

    def _gen_atomic_symbol(self) -> "Symbol":
        """A fresh, unnamed node with the head node's operator and attributes and no inputs
        (an "atomic" symbol): calling it with symbols composes a new application of the
        operator (AMP rebuilds ops around cast inputs this way)."""
        heads = {id(out.node): out.node for out in self._outputs}
        if len(heads) != 1:
            raise MXNetError("_gen_atomic_symbol needs the outputs of a single node, not a "
                             "group of %d nodes" % len(heads))
        node = self._outputs[0].node
        if node.op is None:
            raise MXNetError("_gen_atomic_symbol: '%s' is a variable, not an operator"
                             % node.name)
        atomic = Node(create_op(node.op.name, node.attrs), "", node.attrs)
        return Symbol([Entry(atomic, i) for i in range(node.num_visible_outputs())])

    def _is_atomic(self) -> bool:
        """An operator node still waiting for its inputs (see `_gen_atomic_symbol`)."""
        return is_atomic(self._outputs)

    # ------------------------------------------------------------------ attributes
    def attr(self, key: str) -> Optional[str]:
        """Attribute `key` of the head node; None if absent, or if the outputs come from
        several nodes (MXNet's answer for a group)."""
        node = self._outputs[0].node
        if any(out.node is not node for out in self._outputs):
            return None
        return node.attrs.get(key, node.attrs.get(hidden_key(key)))

    def list_attr(self, recursive: bool = False) -> dict:
        """The attributes of the head node (of the first output's node, for a group)."""
        if recursive:
            raise DeprecationWarning("list_attr(recursive=True) is gone; use attr_dict()")
        return _with_plain_keys(self._outputs[0].node.attrs)

    def attr_dict(self) -> dict:
        return {n.name: _with_plain_keys(n.attrs) for n in self._graph.nodes if n.attrs}

    def _set_attr(self, **kwargs) -> None:
        """Set string attributes of the head node(s) in place; the key `name` renames."""
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError("Set Attr only accepts string values, %s=%r" % (key, value))
        new_name = kwargs.pop("name", None)
        for out in self._outputs:
            node = out.node
            if new_name is not None:
                node.name = new_name
            node.attrs.update({hidden_key(k): v for k, v in kwargs.items()})
            if node.op is not None and any(not k.startswith("__") for k in kwargs):
                node.op = create_op(node.op.name, node.attrs)

    # ------------------------------------------------------------------ composition
    def __call__(self, *args, **kwargs) -> "Symbol":
        """A copy of this symbol with free variables replaced by other symbols."""
        name = kwargs.pop("name", None)
        result = Symbol(self._outputs)
        result._compose(*args, name=name, **kwargs)
        return result

    def _compose(self, *args, name: Optional[str] = None, **kwargs) -> None:
        self._outputs = composed(self, args, kwargs, name)
        self._graph_cache = None

    # ------------------------------------------------------------------ arithmetic
    def _binary(self, other, op_name: str, hint: str, scalar_op: str, scalar_hint: str):
        if isinstance(other, Symbol):
            return make_op_symbol(op_name, [self, other], {}, hint=hint)
        if isinstance(other, (int, float, np.number)):
            return make_op_symbol(scalar_op, [self], {"scalar": other}, hint=scalar_hint)
        raise TypeError("type %s not supported with Symbol" % type(other).__name__)

    def _rscalar(self, other, scalar_op: str, hint: str):
        if isinstance(other, (int, float, np.number)):
            return make_op_symbol(scalar_op, [self], {"scalar": other}, hint=hint)
        raise TypeError("type %s not supported with Symbol" % type(other).__name__)

    def __add__(self, other):
        return self._binary(other, "elemwise_add", "_plus", "_plus_scalar", "_plusscalar")

    def __radd__(self, other):
        return self._rscalar(other, "_plus_scalar", "_plusscalar")

    def __sub__(self, other):
        return self._binary(other, "elemwise_sub", "_minus", "_minus_scalar", "_minusscalar")

    def __rsub__(self, other):
        return self._rscalar(other, "_rminus_scalar", "_rminusscalar")

    def __mul__(self, other):
        return self._binary(other, "elemwise_mul", "_mul", "_mul_scalar", "_mulscalar")

    def __rmul__(self, other):
        return self._rscalar(other, "_mul_scalar", "_mulscalar")

    def __truediv__(self, other):
        return self._binary(other, "elemwise_div", "_div", "_div_scalar", "_divscalar")

    def __rtruediv__(self, other):
        return self._rscalar(other, "_rdiv_scalar", "_rdivscalar")

    def __mod__(self, other):
        return self._binary(other, "_mod", "_mod", "_mod_scalar", "_modscalar")

    def __rmod__(self, other):
        return self._rscalar(other, "_rmod_scalar", "_rmodscalar")

    def __pow__(self, other):
        return self._binary(other, "_power", "_power", "_power_scalar", "_powerscalar")

    def __rpow__(self, other):
        return self._rscalar(other, "_rpower_scalar", "_rpowerscalar")

    def __neg__(self):
        return make_op_symbol("_mul_scalar", [self], {"scalar": -1.0}, hint="_mulscalar")

    def __abs__(self):
        return make_op_symbol("abs", [self], {}, hint="abs")

    def _compare(self, other, op_name: str):
        if isinstance(other, Symbol):
            return make_op_symbol(op_name, [self, other], {}, hint=op_name)
        scalar = op_name + "_scalar"
        return make_op_symbol(scalar, [self], {"scalar": other}, hint=scalar)

    def __eq__(self, other):
        return self._compare(other, "_equal")

    def __ne__(self, other):
        return self._compare(other, "_not_equal")

    def __gt__(self, other):
        return self._compare(other, "_greater")

    def __ge__(self, other):
        return self._compare(other, "_greater_equal")

    def __lt__(self, other):
        return self._compare(other, "_lesser")

    def __le__(self, other):
        return self._compare(other, "_lesser_equal")

    __hash__ = object.__hash__

    # A symbol is a graph, not a value: truth testing, in-place arithmetic and the NDArray
    # methods below have no meaning for it (MXNet raises NotImplementedForSymbol for them).
    __bool__ = _not_for_symbol("__bool__", "bool")
    __iadd__ = _not_for_symbol("__iadd__", "+=")
    __isub__ = _not_for_symbol("__isub__", "-=")
    __imul__ = _not_for_symbol("__imul__", "*=")
    __itruediv__ = _not_for_symbol("__itruediv__", "/=")
    __imod__ = _not_for_symbol("__imod__", "%=")
    __ipow__ = _not_for_symbol("__ipow__", "**=")
    asnumpy = _not_for_symbol("asnumpy")
    asscalar = _not_for_symbol("asscalar")
    wait_to_read = _not_for_symbol("wait_to_read")
    copy = _not_for_symbol("copy")
    detach = _not_for_symbol("detach")
    backward = _not_for_symbol("backward")
    as_in_context = _not_for_symbol("as_in_context")

    def as_nd_ndarray(self) -> "Symbol":
        return self

    # ------------------------------------------------------------------ fluent methods
    def __getattr__(self, name: str):
        if name.startswith("_") or name not in FLUENT_METHODS:
            raise AttributeError("'Symbol' object has no attribute '%s'" % name)
        op_name = FLUENT_METHODS[name]

        def method(*args, **kwargs):
            return make_op_symbol(op_name, [self] + list(args), kwargs, hint=name.lower())
        method.__name__ = name
        return method

    def astype(self, dtype, **kwargs):
        return make_op_symbol("Cast", [self], dict(kwargs, dtype=np.dtype(dtype).name),
                              hint="cast")

    # ------------------------------------------------------------------ inference
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes); (None, None, None) with a warning if incomplete."""
        arg, out, aux = inferred_shapes(self, args, kwargs)
        if not all(shape_is_known(s) for s in arg + out + aux):
            unknown = [n for n, s in zip(self.list_arguments(), arg) if not shape_is_known(s)]
            warnings.warn("Cannot decide shape for the following arguments (%ss in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t"
                          % (-1 if is_np_shape() else 0)
                          + "\n\t".join("%s: %s" % (n, api_shape_out(s))
                                        for n, s in zip(self.list_arguments(), arg)
                                        if n in unknown), stacklevel=2)
            return None, None, None
        return ([api_shape_out(s) for s in arg], [api_shape_out(s) for s in out],
                [api_shape_out(s) for s in aux])

    def infer_shape_partial(self, *args, **kwargs):
        arg, out, aux = inferred_shapes(self, args, kwargs)
        return ([api_shape_out(s) for s in arg], [api_shape_out(s) for s in out],
                [api_shape_out(s) for s in aux])

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as numpy type classes; Nones if incomplete."""
        arg, out, aux = inferred_types(self, args, kwargs)
        if any(t is None for t in arg + out + aux):
            return None, None, None
        return [t.type for t in arg], [t.type for t in out], [t.type for t in aux]

    def infer_type_partial(self, *args, **kwargs):
        arg, out, aux = inferred_types(self, args, kwargs)
        conv = [None if t is None else t.type for t in arg + out + aux]
        return conv[:len(arg)], conv[len(arg):len(arg) + len(out)], conv[len(arg) + len(out):]

    # ------------------------------------------------------------------ serialisation
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """MXNet's JSON of the graph; by default (as MXNet's) without the `amp_cast` and
        `amp_multicast` nodes AMP's conversion adds, each reader reading the cast's source."""
        graph = self._graph
        if remove_amp_cast and any(n.op is not None and n.op.name in AMP_CASTS
                                   for n in graph.nodes):
            graph = Graph.from_heads(without_amp_casts(self._outputs))
        return graph_to_json(graph)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write `tojson(remove_amp_cast)` to `fname` atomically (a temp file, then a rename)."""
        atomic_write(fname, self.tojson(remove_amp_cast))

    def debug_str(self) -> str:
        lines = []
        g = self._graph
        for nid, node in enumerate(g.nodes):
            if node.op is None:
                lines.append("Variable:%s" % node.name)
                continue
            lines.append("-" * 40)
            lines.append("Op:%s, Name=%s" % (node.op.name, node.name))
            lines.append("Inputs:")
            for i, eid in enumerate(g.input_eids[nid]):
                lines.append("\targ[%d]=%s(%d)" % (i, g.entry_name(eid), eid))
            if node.attrs:
                lines.append("Attrs:")
                for k, v in node.attrs.items():
                    lines.append("\t%s=%s" % (k, v))
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ binding
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Allocate arguments, gradients and aux states from shapes, and bind an Executor.

        `stype_dict` names storage types of arguments, as MXNet's; the executor holds every
        array dense (as it does a sparse array given to `bind`), so it is checked and the
        values are the same (docs/compatibility.md, "Sparse NDArrays")."""
        from ..executor.binding import check_stype_dict, simple_bind
        check_stype_dict(stype_dict)
        return simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict,
                           shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                           shared_buffer=shared_buffer, shapes=kwargs, group2ctx=group2ctx)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Bind given arrays (lists in argument order, or dicts by name) into an Executor."""
        from ..executor.binding import bind
        return bind(self, ctx, args, args_grad=args_grad, grad_req=grad_req,
                    aux_states=aux_states, shared_exec=shared_exec, group2ctx=group2ctx)

    def eval(self, ctx=None, **kwargs):
        from ..context import current_context
        exe = self.bind(ctx or current_context(), kwargs)
        exe.forward()
        return exe.outputs

    def gradient(self, wrt):
        raise NotImplementedError("Symbol.gradient is not supported; bind and call backward")


def _with_plain_keys(attrs: dict) -> dict:
    """Attributes with MXNet's hidden keys also listed without their underscores."""
    out = dict(attrs)
    for key in HIDDEN_KEYS:
        dunder = "__%s__" % key
        if dunder in attrs:
            out[key] = attrs[dunder]
    return out


# ---------------------------------------------------------------------------- constructors

def Variable(name: str, attr: Optional[dict] = None, shape=None, lr_mult=None, wd_mult=None,
             dtype=None, init=None, stype=None, **kwargs) -> Symbol:
    """A free input of the graph (data, label or parameter)."""
    if not isinstance(name, str):
        raise TypeError("Variable name must be a string, got %r" % (name,))
    attrs = current_attr_scope().get(attr)
    if shape is not None:
        # an int is a 1-D shape; MXNet keeps it as written ("4"), as the graph reads it
        attrs["__shape__"] = (str(shape) if isinstance(shape, numbers.Integral)
                              else str(tuple(shape)))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_NP_TO_MX[np.dtype(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str(STYPE_CODES[stype])
    for key, value in kwargs.items():
        if key.startswith("__") and key.endswith("__"):
            attrs[key] = str(value)
        else:
            raise ValueError("Attribute name=%s is not supported. Additional attributes must "
                             "start and end with double underscores, e.g. __yourattr__" % key)
    return Symbol([Entry(Node(None, name, attrs), 0)])


var = Variable


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are the outputs of `symbols`, in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Group expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


def make_op_symbol(op_name: str, args: Sequence, kwargs: dict, hint: Optional[str] = None
                   ) -> Symbol:
    """Apply operator `op_name` the way `mx.sym.<OpName>(*args, **kwargs)` does.

    Symbols among args/kwargs are inputs; other kwargs are parameters, stored as `str(value)`.
    Inputs that are not given become variables named `<name>_<slot>`, carrying the op's attrs.
    """
    op_cls = get_op_class(op_name)
    kwargs = dict(kwargs)
    name = kwargs.pop("name", None)
    attr = dict(kwargs.pop("attr", None) or {})
    # lr_mult=, wd_mult=, ctx_group= ... are attributes, not parameters: MXNet stores them as
    # __lr_mult__ ... on the node and on the variables it creates (the weight's multipliers)
    for key in HIDDEN_KEYS:
        if key in kwargs and key not in _attrs_field_names(op_cls):
            attr[key] = param_text(kwargs.pop(key))
    positional, kwargs = call_arguments(op_cls, args, kwargs,
                                        lambda v: isinstance(v, Symbol))
    sym_kwargs = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    params = call_params(op_cls, kwargs, lambda v: isinstance(v, Symbol))
    if "num_args" in _attrs_field_names(op_cls) and "num_args" not in params:
        params["num_args"] = str(len(positional) + len(sym_kwargs))
    attrs = current_attr_scope().get(attr)
    attrs.update(params)
    op = op_cls(attrs)
    name = current_name_manager().get(name, hint or op_name.lower())
    inputs = _inputs_by_slot(op, positional, sym_kwargs)
    node = Node(op, name, attrs, _input_entries(op, name, attrs, inputs))
    return Symbol([Entry(node, i) for i in range(op.num_visible_outputs())])


def _inputs_by_slot(op, positional: list, named: dict) -> list:
    """The input symbols of `op` per slot (arguments, then aux states); None: not given."""
    slots = op.arguments() + op.aux_states()
    if len(positional) > len(slots):
        raise TypeError("%s takes %d inputs (%s), got %d"
                        % (op.name, len(slots), ", ".join(slots), len(positional)))
    inputs = list(positional) + [None] * (len(slots) - len(positional))
    for key, s in named.items():
        if key not in slots:
            raise TypeError("%s has no input named '%s' (inputs: %s)"
                            % (op.name, key, ", ".join(slots)))
        inputs[slots.index(key)] = s
    return inputs


def _input_entries(op, name: str, attrs: dict, inputs: list) -> list:
    """The entries a new node of `op` reads: each given symbol's output, or a new variable
    `<name>_<slot>` carrying the node's attributes (and those the op gives such a variable)."""
    entries = []
    for slot, s in zip(op.arguments() + op.aux_states(), inputs):
        if s is None:
            vattrs = dict(attrs)
            vattrs.update(op.input_var_attrs.get(slot, {}))
            entries.append(Entry(Node(None, "%s_%s" % (name, slot), vattrs), 0))
        elif len(s._outputs) != 1:
            raise TypeError("%s: input '%s' is a group of %d outputs; pass one output"
                            % (op.name, slot, len(s._outputs)))
        else:
            entries.append(s._outputs[0])
    return entries


def _attrs_field_names(op_cls) -> set:
    import dataclasses
    attrs_cls = op_cls.Attrs
    if not dataclasses.is_dataclass(attrs_cls):
        return set()
    return {f.name for f in dataclasses.fields(attrs_cls)}


def load_json(json_str: str) -> Symbol:
    """A Symbol from MXNet's JSON (current and legacy forms)."""
    return Symbol(graph_from_json(json_str))


def load(fname: str) -> Symbol:
    """A Symbol from a JSON file; any failure is an MXNetError naming the file."""
    from ..ndarray.serialization import naming_file, read_file
    data = read_file(fname, "symbol file")
    with naming_file(fname):
        return load_json(data)
