"""The operator contract and registry.

An operator is one class, registered under its MXNet name (plus aliases). A graph node holds one
instance, built from the node's string attributes, which are parsed once into the op's frozen
`Attrs` dataclass with MXNet's defaults. Everything the passes and the executor need to know about
the op is a member of the class:

- `arguments()`, `outputs()`, `aux_states()`: slot names (may depend on attrs); `outputs()` lists
  hidden outputs too (BatchNorm's saved mean and variance, Dropout's mask), of which the first
  `num_visible_outputs()` are what the user sees.
- `infer_shape(in_shapes, out_shapes)`: fill in what can be deduced, forwards and backwards.
  A shape is a tuple whose dims may be None (unknown), or None when even its rank is unknown.
  `in_shapes` covers arguments followed by aux states.
- `infer_type(in_types, out_types)`: same for numpy dtypes; by default every slot takes the first
  known dtype.
- `forward(xp, inputs, aux, out, is_train)`: write the outputs into the preallocated `out` arrays.
- `backward(xp, out_grads, inputs, outputs, in_grads, aux)`: write input gradients into `in_grads`;
  a None slot is a gradient nobody asked for. Arrays the op did not declare in
  `backward_inputs`/`backward_outputs` are passed as None.
- `needs_out_grad`: False for loss heads, whose backward ignores the head gradient.
- `inplace`: (input index, output index) pairs whose storage the output may take over.
- `views`: (input index, output index) pairs where the output is the input's bytes unchanged
  (a reshape, a copy): the output may share the input's storage while the input stays live,
  and a step whose outputs all share so has nothing to do. `grad_views`: (output index,
  argument index) pairs where the argument's gradient is the output's head gradient unchanged.
  `part_offsets(in_shapes, out_shapes)`: where each output lies in input 0, as element offsets,
  when every output is one run of its elements (a split along the leading axis), else None;
  `join_offsets(in_shapes, out_shapes)`: where each input lies in output 0 when the output is
  the inputs' elements one run after another (a join along the leading axis), else None. The
  planner then places those outputs (inputs) in place, and the step has nothing to do.
- optional hooks with defaults here, which the executor reads without probing: flags
  (`grads_all_inputs`, `is_backward`, `deterministic` ...) and what the monitor and the plan
  listing see of a node (`as_written`, `unfused_nodes`, `layout_note`).
Ops never import numpy or cupy; they receive the array module `xp`. What makes an op fast
(bound steps, batch-last and fused forms, device variants such as cuDNN's) is registered
against the op class in `minimod.kernels`, which the executor and the passes ask; the op holds
its math once.
"""
from __future__ import annotations

import ast
import dataclasses
import typing
from typing import Any, ClassVar, Literal, Mapping, Optional, Sequence, Union

from ..base import DTypeError, GraphError, OpParamError, ShapeError

__all__ = [
    "Op", "VariadicOp", "register", "get_op_class", "create_op", "list_ops", "canonical_name",
    "Shape", "merge_shape", "shape_is_known", "NoAttrs", "parse_value", "call_arguments",
    "param_text", "call_params",
]

Shape = Optional[tuple]

_REGISTRY: dict[str, type] = {}


# ----------------------------------------------------------------------------- shapes

def shape_is_known(shape: Shape) -> bool:
    """True when the rank and every dim are known."""
    return shape is not None and all(d is not None for d in shape)


def merge_shape(have: Shape, new: Shape) -> Shape:
    """The union of two partial shapes; raises ValueError when they contradict each other."""
    if new is None:
        return have
    if have is None:
        return tuple(new)
    if len(have) != len(new):
        raise ValueError("rank differs")
    out = []
    for a, b in zip(have, new):
        if a is None:
            out.append(b)
        elif b is None or a == b:
            out.append(a)
        else:
            raise ValueError("dims differ")
    return tuple(out)


def fmt_shape(shape: Shape) -> str:
    if shape is None:
        return "unknown"
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + (
        ",)" if len(shape) == 1 else ")")


# ----------------------------------------------------------------------------- attributes

class NoAttrs:
    """Attrs of an op without parameters."""


def _strip_optional(tp):
    if typing.get_origin(tp) is Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else Union[tuple(args)], True
    return tp, False


def _parse_literal_text(text: str):
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
        if low in ("none", "null"):
            return None
        return text


def parse_value(tp, value: Any) -> Any:
    """Convert a user value or an MXNet JSON string into the annotated type `tp`.

    Raises ValueError with a short reason when the value does not fit.
    """
    tp, optional = _strip_optional(tp)
    if isinstance(value, str) and tp is not str and typing.get_origin(tp) is not Literal:
        value = _parse_literal_text(value)
    if value is None or (isinstance(value, str) and value in ("None", "")):
        if optional:
            return None
        if value is None:
            raise ValueError("None is not allowed")
    origin = typing.get_origin(tp)
    if origin is Literal:
        choices = typing.get_args(tp)
        text = value if isinstance(value, str) else str(value)
        if text not in choices:
            raise ValueError("must be one of %s" % ", ".join(repr(c) for c in choices))
        return text
    if tp is bool:
        if isinstance(value, str):
            low = value.strip().lower()
            if low in ("true", "1"):
                return True
            if low in ("false", "0"):
                return False
            raise ValueError("not a boolean")
        if isinstance(value, (bool, int)) or hasattr(value, "__index__"):
            return bool(value)
        raise ValueError("not a boolean")
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise ValueError("not an integer")
        return int(value)
    if tp is float:
        if isinstance(value, (list, tuple)) or isinstance(value, str):
            raise ValueError("not a number")
        return float(value)
    if tp is str:
        return str(value)
    if origin is tuple:
        item_tp = typing.get_args(tp)[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = (value,)
        if not isinstance(value, (list, tuple)):
            raise ValueError("not a tuple")
        return tuple(None if v is None else parse_value(item_tp, v) for v in value)
    if tp is Any:
        return value
    raise TypeError("unsupported attribute type %r" % (tp,))


#: Attrs class -> {field name: annotated type}, filled on the class's first parse
_FIELD_TYPES: dict = {}


def _attrs_fields(attrs_cls) -> dict:
    cached = _FIELD_TYPES.get(attrs_cls)
    if cached is None:
        hints = typing.get_type_hints(attrs_cls)
        cached = _FIELD_TYPES[attrs_cls] = {f.name: hints[f.name]
                                            for f in dataclasses.fields(attrs_cls)}
    return cached


def parse_attrs(attrs_cls, raw: Mapping[str, Any], op_name: str):
    """Build the op's frozen Attrs from string (JSON) or Python values; dunder keys are skipped."""
    if attrs_cls is NoAttrs:
        extra = [k for k in raw if not (k.startswith("__") and k.endswith("__"))]
        if extra:
            raise OpParamError("operator %s takes no parameters, got %s" % (op_name, sorted(extra)))
        return NoAttrs()
    fields = _attrs_fields(attrs_cls)
    values = {}
    for key, value in raw.items():
        if key.startswith("__") and key.endswith("__"):
            continue
        if key not in fields:
            raise OpParamError(
                "operator %s has no parameter '%s' (its parameters: %s)"
                % (op_name, key, ", ".join(sorted(fields)) or "none"))
        try:
            values[key] = parse_value(fields[key], value)
        except (ValueError, TypeError) as err:
            raise OpParamError("operator %s: parameter %s=%r is invalid: %s"
                               % (op_name, key, value, err)) from None
    try:
        return attrs_cls(**values)
    except TypeError:
        missing = [f.name for f in dataclasses.fields(attrs_cls)
                   if f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING and f.name not in values]
        raise OpParamError("operator %s: required parameter(s) %s not given"
                           % (op_name, ", ".join(missing))) from None


# ----------------------------------------------------------------------------- the contract

class Op:
    """Base class of every operator; see the module docstring for the contract."""

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple] = ()
    Attrs: ClassVar[type] = NoAttrs
    ARGUMENTS: ClassVar[tuple] = ("data",)
    OUTPUTS: ClassVar[tuple] = ("output",)
    AUX: ClassVar[tuple] = ()
    needs_out_grad: ClassVar[bool] = True
    inplace: ClassVar[tuple] = ()
    views: ClassVar[tuple] = ()
    grad_views: ClassVar[tuple] = ()
    #: which inputs / outputs backward reads: "all", or a tuple of indices
    backward_inputs: ClassVar = "all"
    backward_outputs: ClassVar = "all"
    #: True when the op's output carries no gradient back to its inputs (BlockGrad, argmax ...)
    no_gradient: ClassVar[bool] = False
    #: False when two runs on the same inputs and attributes may differ or must both happen
    #: (random draws, dropout, ops with state of their own): common-subexpression elimination
    #: (`minimod.passes.cse`) then never merges two such nodes
    deterministic: ClassVar[bool] = True
    #: False where MXNet registers the op without a gradient (batch_take ...): binding with a
    #: gradient requested through it is an error (`minimod.passes.gradient`)
    differentiable: ClassVar[bool] = True
    #: True when an output's shape depends on input values (boolean_mask): such an op runs
    #: imperatively through `forward_dynamic`, and a bound graph, whose memory is planned from
    #: shapes alone, refuses it
    dynamic_shape: ClassVar[bool] = False
    #: True for the one-input ops with f(0) = 0 that MXNet runs on a sparse array's stored
    #: values, keeping its storage type (sqrt, abs, relu ...): `mx.nd.<op>` of a row-sparse
    #: or CSR array does the same (`minimod.ndarray.imperative.run_op`)
    keeps_sparse: ClassVar[bool] = False
    #: slot -> attributes MXNet gives the variable it creates for that input when the user
    #: gives none (BatchNorm's moving statistics start as zeros and ones, PReLU's gamma as
    #: 0.25): `{"moving_mean": {"__init__": '["zero", {}]'}}`
    input_var_attrs: ClassVar[dict] = {}
    #: True where MXNet registers the op without input names: its monitor then calls the
    #: inputs "input0", "input1", ... (Activation, Reshape, the unary and scalar maths, the
    #: reductions), where it says "data", "lhs", "weight" ... for the others
    positional_inputs: ClassVar[bool] = False
    #: MXNet's calling order (`call_signature`), where ARGUMENTS + AUX and the Attrs fields'
    #: order do not give it: every input MXNet's frontend names, used by these attrs or not
    #: (FullyConnected's bias), and the parameters in MXNet's order
    SIGNATURE_INPUTS: ClassVar[Optional[tuple]] = None
    PARAM_ORDER: ClassVar[Optional[tuple]] = None
    #: True where MXNet's frontend takes `(*data, **kwargs)`: every positional argument is an
    #: input and parameters come by keyword (Concat, add_n, UpSampling, Custom)
    VARIADIC_CALL: ClassVar[bool] = False
    #: the graphs a control-flow node runs (`_foreach`'s body), set on the instance by the
    #: frontend or the JSON reader; empty for every other op
    subgraphs: ClassVar[tuple] = ()
    #: True when the gradient pass must ask for every argument's gradient or none (Concat
    #: places a gradient slot by the widths of all slots)
    grads_all_inputs: ClassVar[bool] = False
    #: True for the backward half of an op (`minimod.passes.gradient.BackwardOp`), which the
    #: executor runs through its forward op's `backward`
    is_backward: ClassVar[bool] = False

    def __init__(self, attrs: Mapping[str, Any] | None = None):
        self.raw_attrs = dict(attrs or {})
        self.attrs = parse_attrs(self.Attrs, self.raw_attrs, self.name)

    @classmethod
    def call_signature(cls) -> tuple:
        """(inputs, parameters): the order in which `mx.sym.<op>(...)` and `mx.nd.<op>(...)`
        take positional arguments, MXNet's: every input first, then the parameters."""
        inputs = cls.SIGNATURE_INPUTS
        if inputs is None:
            inputs = tuple(cls.ARGUMENTS) + tuple(cls.AUX)
        params = cls.PARAM_ORDER
        if params is None:
            params = () if cls.Attrs is NoAttrs else tuple(
                f.name for f in dataclasses.fields(cls.Attrs))
        return inputs, params

    # --- slots
    def arguments(self) -> list:
        return list(self.ARGUMENTS)

    def outputs(self) -> list:
        return list(self.OUTPUTS)

    def aux_states(self) -> list:
        return list(self.AUX)

    def monitor_input_names(self) -> list:
        """The names MXNet's monitor gives this op's inputs, aux states included (the
        executor reports input i as "<node name>_<name i>")."""
        names = self.arguments() + self.aux_states()
        return ["input%d" % i for i in range(len(names))] if self.positional_inputs else names

    def num_visible_outputs(self) -> int:
        return len(self.outputs())

    def num_inputs(self) -> int:
        return len(self.arguments()) + len(self.aux_states())

    def num_outputs(self) -> int:
        return len(self.outputs())

    def num_json_outputs(self) -> int:
        """How many outputs MXNet's JSON counts for this node (its node_row_ptr step).

        Usually all of them; an op may keep extra hidden outputs of its own at the end (the RNN
        op's reserve of forward activations for backward) that MXNet does not count.
        """
        return self.num_outputs()

    def output_names(self, node_name: str) -> list:
        """User-visible output names: `<name>_output`, or `<name>_output<i>` for several."""
        n = self.num_visible_outputs()
        if n == 1:
            return ["%s_output" % node_name]
        return ["%s_%s" % (node_name, o) for o in self.outputs()[:n]]

    # --- inference
    def infer_shape(self, in_shapes: list, out_shapes: list):
        """Default: every input and output has one shape (elementwise ops)."""
        return self.same_shape(in_shapes, out_shapes)

    def infer_type(self, in_types: list, out_types: list):
        known = next((t for t in list(in_types) + list(out_types) if t is not None), None)
        if known is None:
            return in_types, out_types
        for i, t in enumerate(in_types):
            if t is not None and t != known:
                raise DTypeError("input '%s' has dtype %s but input '%s' has %s"
                                 % (self._in_name(i), t, self._first_name(in_types, known),
                                    known))
        return [known] * len(in_types), [known] * len(out_types)

    # --- execution
    def forward(self, xp, inputs, aux, out, is_train):
        raise NotImplementedError(self.name)

    def backward(self, xp, out_grads, inputs, outputs, in_grads, aux):
        raise NotImplementedError("%s has no backward" % self.name)

    def forward_dynamic(self, xp, inputs) -> list:
        """The outputs of an op with `dynamic_shape`, allocated by the op itself."""
        raise NotImplementedError("%s has static output shapes" % self.name)

    # --- where the memory plan may place outputs inside inputs, or inputs inside the output
    def part_offsets(self, in_shapes: list, out_shapes: list):
        """Element offsets of the outputs inside input 0, or None (see the module docstring)."""
        return None

    def join_offsets(self, in_shapes: list, out_shapes: list):
        """Element offsets of the inputs inside output 0, or None (see the module docstring)."""
        return None

    # --- what the monitor and the plan listing see (the ops that rewrites put in a plan's
    # graph, batch-last and fused forms, answer differently)
    def as_written(self, xp, inputs: list, outputs: list) -> tuple:
        """(inputs, outputs) as the graph the user wrote holds them: for a batch-last form,
        views in MXNet's layout; for every other op, the arrays themselves."""
        return inputs, outputs

    def unfused_nodes(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        """The nodes the user wrote that this node stands for, as (name, op, inputs, outputs):
        the node itself, or, for a fused op, each node it absorbed with its arrays."""
        return [(node_name, self, list(inputs), list(outputs))]

    def gradient_arguments(self) -> list:
        """The arguments whose gradients this op's gradient node reports to the monitor: all
        of them, less an input a rewrite added that carries no gradient."""
        return self.arguments()

    def gradient_reports(self, xp, node_name: str, inputs: list, outputs: list) -> list:
        """Among the gradient nodes (a sum of gradients, a rewrite's node), what the monitor
        sees of this node after it ran, as (name, array): each output as `<node>_output<k>`;
        a rewrite's node reports the nodes it stands for, or nothing."""
        return [("%s_output%d" % (node_name, k), out) for k, out in enumerate(outputs)]

    def layout_note(self) -> str:
        """'' or a note for plan listings, such as ' [batch-last in, out]'."""
        return ""

    # --- helpers for subclasses
    def _in_name(self, i: int) -> str:
        names = self.arguments() + self.aux_states()
        return names[i] if i < len(names) else "input%d" % i

    def _first_name(self, types, known) -> str:
        for i, t in enumerate(types):
            if t == known:
                return self._in_name(i)
        return "output"

    def set_in(self, in_shapes: list, i: int, shape: Shape, why: str = "") -> None:
        """Merge `shape` into input slot i, raising a ShapeError naming the slot and both shapes."""
        try:
            in_shapes[i] = merge_shape(in_shapes[i], shape)
        except ValueError:
            raise ShapeError("input '%s' has shape %s but %sneeds %s"
                             % (self._in_name(i), fmt_shape(in_shapes[i]),
                                (why + " ") if why else "the operator ",
                                fmt_shape(shape))) from None

    def set_out(self, out_shapes: list, i: int, shape: Shape, why: str = "") -> None:
        try:
            out_shapes[i] = merge_shape(out_shapes[i], shape)
        except ValueError:
            raise ShapeError("output '%s' has shape %s but %sgives %s"
                             % (self.outputs()[i], fmt_shape(out_shapes[i]),
                                (why + " ") if why else "the operator ",
                                fmt_shape(shape))) from None

    def same_shape(self, in_shapes, out_shapes, in_idx: Sequence[int] | None = None,
                   out_idx: Sequence[int] | None = None):
        """Unify the shapes of the given slots (default: all of them)."""
        in_idx = range(len(in_shapes)) if in_idx is None else in_idx
        out_idx = range(len(out_shapes)) if out_idx is None else out_idx
        merged = None
        source = None
        for i in in_idx:
            try:
                merged = merge_shape(merged, in_shapes[i])
            except ValueError:
                raise ShapeError("input '%s' has shape %s but input %s has %s"
                                 % (self._in_name(i), fmt_shape(in_shapes[i]), source,
                                    fmt_shape(merged))) from None
            if in_shapes[i] is not None and source is None:
                source = "'%s'" % self._in_name(i)
        for i in out_idx:
            try:
                merged = merge_shape(merged, out_shapes[i])
            except ValueError:
                raise ShapeError("output '%s' has shape %s but input %s has %s"
                                 % (self.outputs()[i], fmt_shape(out_shapes[i]), source,
                                    fmt_shape(merged))) from None
        if merged is not None:
            for i in in_idx:
                in_shapes[i] = merged
            for i in out_idx:
                out_shapes[i] = merged
        return in_shapes, out_shapes

    def __repr__(self):
        return "<%s %s>" % (self.name, self.raw_attrs)


class VariadicOp(Op):
    """Base of ops over `num_args` inputs named arg0, arg1, ... (Concat, stack, add_n).

    The symbol layer fills `num_args` from the number of inputs given, as MXNet's frontend does.
    """

    VARIADIC_CALL = True

    def __init__(self, attrs: Mapping[str, Any] | None = None):
        super().__init__(attrs)
        if self.attrs.num_args < 1:
            raise OpParamError("operator %s: num_args must be >= 1, got %d"
                               % (self.name, self.attrs.num_args))
        self._args = ["arg%d" % i for i in range(self.attrs.num_args)]

    def arguments(self) -> list:
        return list(self._args)


def param_text(value: Any) -> str:
    """A parameter value as the frontends store it: `str(value)`, as MXNet's do, with lists
    written as tuples and dtypes by name ("float16", not "<class 'numpy.float16'>")."""
    import numpy as np  # host-side metadata only: naming a dtype (ops compute through xp)
    if isinstance(value, str):
        return value
    if isinstance(value, (np.dtype, type)):
        return np.dtype(value).name
    if isinstance(value, (list, tuple)):
        # a tuple's text holds its items' repr, "np.int64(3)" under NumPy 2: use plain numbers
        value = tuple(_plain_number(v) for v in value)
    return str(value)


def _plain_number(value: Any) -> Any:
    """A NumPy scalar as the Python number its str() shows (np.float32(0.1) -> 0.1)."""
    import numpy as np  # host-side metadata only
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(str(value))
    return value


def call_params(op_cls, named: Mapping[str, Any], is_input) -> dict:
    """The parameters among a call's named arguments (`call_arguments`), as text. None is
    passed on as "None" where the parameter may be None (topk's axis=None: the flattened
    data, as MXNet's frontends pass it) and means "not given" elsewhere."""
    fields = {} if op_cls.Attrs is NoAttrs else _attrs_fields(op_cls.Attrs)
    params = {}
    for key, value in named.items():
        if is_input(value):
            continue
        if value is None:
            if key not in fields or not _strip_optional(fields[key])[1]:
                continue
        params[key] = param_text(value)
    return params


def call_arguments(op_cls, args: Sequence, kwargs: Mapping[str, Any], is_input) -> tuple:
    """Sort the arguments of a call `mx.sym.<op>(*args, **kwargs)` (or `mx.nd.<op>`) as
    MXNet's frontend does: returns (inputs of a variadic op, in order; every other argument by
    name). A list or tuple of inputs counts as that many positional arguments. Positional
    arguments of a variadic op (Concat, add_n) are all inputs; for the others they follow
    `call_signature()`, inputs first, then parameters, so `clip(x, 0, 1)` is
    `clip(x, a_min=0, a_max=1)`. A positional None input means "not given". `is_input(value)`
    tells an input (a Symbol, an NDArray) from a parameter value."""
    flat = []
    for a in args:
        if isinstance(a, (list, tuple)) and a and all(map(is_input, a)):
            flat.extend(a)
        else:
            flat.append(a)
    if op_cls.VARIADIC_CALL:
        for a in flat:
            if not is_input(a):
                raise TypeError("%s: positional arguments are its inputs, got %s; give "
                                "parameters by keyword" % (op_cls.name, type(a).__name__))
        return flat, dict(kwargs)
    inputs, params = op_cls.call_signature()
    order = inputs + params
    if len(flat) > len(order):
        raise TypeError("%s takes at most %d positional arguments (%s), got %d"
                        % (op_cls.name, len(order), ", ".join(order), len(flat)))
    named = dict(kwargs)
    for i, (key, value) in enumerate(zip(order, flat)):
        if value is None and (i < len(inputs) or key in named):
            continue  # an input not given; a parameter None goes on to `call_params`
        if key in named:
            raise TypeError("%s got multiple values for '%s'" % (op_cls.name, key))
        if value is not None and (i < len(inputs)) != bool(is_input(value)):
            raise TypeError("%s: positional argument %d is its %s '%s', got %s"
                            % (op_cls.name, i, "input" if i < len(inputs) else "parameter",
                               key, type(value).__name__))
        named[key] = value
    return [], named


# ----------------------------------------------------------------------------- registry

def register(cls):
    """Class decorator: register an Op subclass under its name and aliases."""
    if not cls.name:
        raise TypeError("%s has no name" % cls.__name__)
    for key in (cls.name,) + tuple(cls.aliases):
        if key in _REGISTRY and _REGISTRY[key] is not cls:
            raise TypeError("operator name %s registered twice" % key)
        _REGISTRY[key] = cls
    return cls


def _ensure_loaded():
    from . import _load_all  # noqa: F401  (imports every op family once)


def get_op_class(name: str):
    _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise GraphError("unknown operator '%s'" % name) from None


def create_op(name: str, attrs: Mapping[str, Any] | None = None) -> Op:
    return get_op_class(name)(attrs)


def canonical_name(name: str) -> str:
    return get_op_class(name).name


def list_ops() -> dict:
    """name (and alias) -> op class."""
    _ensure_loaded()
    return dict(_REGISTRY)
