"""Binding: a symbol compiled for shapes or arrays and given arrays on one device.

- `simple_bind` compiles for given shapes and allocates every argument, gradient and aux
  state (parameters in one flat buffer per dtype, `flat_params.flat_buffers`), sharing
  arrays with `shared_exec` and input buffers with `shared_buffer` (buckets);
- `bind` compiles for the arrays the user gives and binds them as they are.

Both compile with `passes.default_options()`: every rewrite, less those the user switched off.

Given `group2ctx` (model parallelism: `passes.placement` decides where every node runs),
`simple_bind` allocates each argument, gradient and aux state on its variable's device, and
the trained parameters in one flat buffer per device and dtype, so the fused update
(`minimod.flat`) works on parameters spread over devices as on one device: buffer by buffer;
`bind` takes each array where it is, and its gradient array must be there too.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Mapping, Optional

import numpy as np

from .. import backend
from ..base import BindError, ShapeError
from ..context import Context
from ..graph.attrs import STYPE_CODES
from ..ndarray.ndarray import NDArray
from ..passes import Plan, compile_graph, default_options, normalize_grad_req, placement_for
from ..passes.memory import entry_nbytes
from ..shape_semantics import api_shape_in, is_np_shape
from .executor import Executor
from .flat_params import flat_buffers
from .placing import context_of, variable_contexts
from .pool import MemoryPool, zeros

__all__ = ["simple_bind", "bind"]


def simple_bind(symbol, ctx: Context, grad_req="write", type_dict=None, shared_arg_names=None,
                shared_exec: Optional[Executor] = None, shared_buffer: Optional[dict] = None,
                shapes: Optional[Mapping] = None, reuse_memory: bool = True,
                group2ctx=None) -> Executor:
    """Compile `symbol` for `shapes` and allocate its arrays on `ctx` (see Symbol.simple_bind),
    or, with `group2ctx`, each on its variable's device.

    `reuse_memory=False` gives every entry its own block: the baseline of the plan-safety tests.
    """
    graph = symbol._graph
    arg_names = [graph.nodes[i].name for i in graph.argument_ids()]
    shapes, type_dict = _known_inputs(graph, arg_names, shapes, type_dict)
    reqs = normalize_grad_req(grad_req, arg_names)
    plan = compile_graph(graph, shapes, type_dict, reqs, default_options(reuse_memory), ctx=ctx,
                         placement=placement_for(graph, group2ctx, ctx))
    shared = _Shared(shared_exec, shared_arg_names)
    pool = shared_exec._pool if shared_exec is not None else MemoryPool(ctx)
    # parameters (the shared names) allocated here live in one flat buffer per dtype (and
    # device)
    flats = flat_buffers(shared.fresh_params(plan, reqs), ctx, variable_contexts(plan, ctx))
    args, grads = _arguments(plan, reqs, flats, shared, shared_buffer, pool, ctx)
    aux = [shared.aux_or_zeros(name, plan.shapes[eid], plan.dtypes[eid],
                               context_of(plan, eid, ctx))
           for name, eid in zip(plan.aux_names, plan.aux_eids)]
    executor = Executor(symbol, plan, ctx, args, grads, aux, pool=pool)
    inherited = shared_exec.flat_params if shared_exec is not None else []
    executor.flat_params = list(dict.fromkeys(list(flats.values()) + list(inherited)))
    return executor


def check_stype_dict(stype_dict) -> None:
    """Refuse a `stype_dict` (argument name -> storage type) with a type MXNet does not have;
    names that are not arguments are ignored, as MXNet ignores them."""
    if stype_dict is None:
        return
    if not isinstance(stype_dict, Mapping):
        raise TypeError("simple_bind: stype_dict must map argument names to storage types, "
                        "got %s" % type(stype_dict).__name__)
    for name, stype in stype_dict.items():
        if stype not in STYPE_CODES:
            raise BindError("simple_bind: stype_dict[%r] = %r is not a storage type ('default', "
                            "'row_sparse' or 'csr')" % (name, stype))


def _arguments(plan: Plan, reqs: dict, flats: dict, shared: "_Shared",
               shared_buffer: Optional[dict], pool: MemoryPool, ctx: Context) -> tuple:
    """(the argument arrays, their gradient arrays or None) of a simple_bind: views of the
    flat buffers, arrays shared with `shared_exec`, views of the shared input buffers, or new
    zeros, each on its variable's device."""
    args, grads = [], []
    for name, eid in zip(plan.arg_names, plan.arg_eids):
        shape, dtype, where = plan.shapes[eid], plan.dtypes[eid], context_of(plan, eid, ctx)
        wants_grad = reqs[name] != "null"
        if name in flats:
            arg, grad = flats[name].weights[name], flats[name].grads[name]
        elif shared.has_param(name, shape, dtype):
            arg, grad = shared.param(name, shape, dtype, wants_grad, where)
        else:
            if shared_buffer is not None and name not in shared.names:
                arg = _from_buffer(shared_buffer, name, shape, dtype, where, pool)
            else:
                arg = zeros(shape, dtype, where)
            grad = zeros(shape, dtype, where) if wants_grad else None
        args.append(arg)
        grads.append(grad)
    return args, grads


def _known_inputs(graph, arg_names: list, shapes: Optional[Mapping], type_dict) -> tuple:
    """(shapes, dtypes) given for the symbol's inputs; other names are dropped, with a warning
    for shapes (MXNet ignores them: force_rebind=True in its own tests, typos elsewhere). A
    shape of None is no shape, as in MXNet (`label=label_shape` where a net has no label)."""
    inputs = set(arg_names) | {graph.nodes[i].name for i in graph.aux_ids()}
    shapes = dict(shapes or {})
    unknown = [k for k in shapes if k not in inputs]
    if unknown:
        warnings.warn("simple_bind: ignoring %s, not among the symbol's arguments (%s)"
                      % (", ".join("'%s'" % k for k in unknown), ", ".join(arg_names)),
                      stacklevel=4)
    shapes = {k: v for k, v in shapes.items() if k in inputs and v is not None}
    bad = {k: v for k, v in shapes.items() if not isinstance(v, (tuple, list))}
    if bad:
        raise TypeError("simple_bind: a shape is a tuple of ints; got %s"
                        % ", ".join("%s=%r" % kv for kv in bad.items()))
    shapes = {k: tuple(v) for k, v in shapes.items()}
    for name, shape in shapes.items():
        if any(d is None for d in api_shape_in(shape)):
            raise ShapeError("simple_bind: '%s' is given shape %s, with a dim that means "
                             "unknown (%s); give every dim%s" % (
                                 name, shape, "-1" if is_np_shape() else "0 or -1",
                                 "" if is_np_shape() else " (a zero-size batch needs "
                                 "mx.np_shape(True))"))
    type_dict = {k: np.dtype(v) for k, v in (type_dict or {}).items() if k in inputs}
    return shapes, type_dict


class _Shared:
    """What a `simple_bind` may take over from `shared_exec`: the arrays of the parameters
    named in `shared_arg_names` (where their shape and dtype fit), and aux states."""

    def __init__(self, shared_exec: Optional[Executor], shared_arg_names):
        self.names = set(shared_arg_names or ())
        self.args = shared_exec.arg_dict if shared_exec is not None else {}
        self.grads = shared_exec.grad_dict if shared_exec is not None else {}
        self.aux = shared_exec.aux_dict if shared_exec is not None else {}

    def has_param(self, name: str, shape, dtype) -> bool:
        return name in self.names and name in self.args and _fits(self.args[name], shape,
                                                                  dtype)

    def fresh_params(self, plan: Plan, reqs: dict) -> list:
        """(name, shape, dtype) of the trained parameters this bind allocates itself."""
        return [(name, plan.shapes[eid], plan.dtypes[eid])
                for name, eid in zip(plan.arg_names, plan.arg_eids)
                if name in self.names and reqs[name] != "null"
                and not (name in self.args and _fits(self.args[name], plan.shapes[eid],
                                                     plan.dtypes[eid]))]

    def param(self, name: str, shape, dtype, wants_grad: bool, ctx) -> tuple:
        """(the shared parameter, its shared gradient or a new one, or None)."""
        if not wants_grad:
            return self.args[name], None
        grad = self.grads.get(name)
        if grad is None or not _fits(grad, shape, dtype):
            grad = zeros(shape, dtype, ctx)
        return self.args[name], grad

    def aux_or_zeros(self, name: str, shape, dtype, ctx) -> NDArray:
        have = self.aux.get(name)
        return have if have is not None and _fits(have, shape, dtype) else zeros(shape, dtype,
                                                                                  ctx)


def _fits(arr: NDArray, shape, dtype) -> bool:
    return arr.shape == tuple(shape) and np.dtype(arr.dtype) == np.dtype(dtype)


# id(shared buffer array) -> weak references to the views handed out of it (NDArray compares
# elementwise, so it cannot key a WeakKeyDictionary)
_BUFFER_VIEWS: dict = {}


def _views_of(base: NDArray) -> list:
    views = _BUFFER_VIEWS.get(id(base))
    if views is None:
        views = _BUFFER_VIEWS[id(base)] = []
        weakref.finalize(base, _BUFFER_VIEWS.pop, id(base), None)
    return views


def _view_of(base: NDArray, shape, ctx) -> NDArray:
    size = int(np.prod(shape, dtype=np.int64))
    view = NDArray(base._data.reshape(-1)[:size].reshape(shape), ctx)
    _views_of(base).append(weakref.ref(view))
    return view


def _from_buffer(buffer: dict, name: str, shape, dtype, ctx,
                 pool: Optional[MemoryPool]) -> NDArray:
    """A view of the shared buffer's array for `name` (bucketing's input arrays).

    When a larger shape arrives, one larger array replaces the buffer and every view handed out
    before is moved onto it (the executors holding them re-derive their steps, through the
    pool's generation), so all buckets together hold one buffer per input, sized to the largest.
    """
    have = buffer.get(name)
    compatible = (have is not None and have.context == ctx
                  and np.dtype(have.dtype) == np.dtype(dtype))
    if compatible and have._data.nbytes >= entry_nbytes(shape, dtype):
        return _view_of(have, shape, ctx)
    base = zeros(shape, dtype, ctx)
    if compatible:
        for ref in _views_of(have):
            old = ref()
            if old is not None:
                old._data = base._data.reshape(-1)[:old.size].reshape(old.shape)
                _views_of(base).append(ref)
        _views_of(have).clear()
        if pool is not None:
            pool.generation += 1
    buffer[name] = base
    return _view_of(base, shape, ctx)


def bind(symbol, ctx: Context, args, args_grad=None, grad_req="write", aux_states=None,
         shared_exec: Optional[Executor] = None, group2ctx=None) -> Executor:
    """Bind given arrays (lists in argument order or dicts by name) into an Executor.

    As in MXNet, a gradient array bound for an argument whose grad_req is 'null' stays in
    `grad_arrays` / `grad_dict` and is never written; a dtype of a bound array overrides the
    dtype a Variable declares. With `group2ctx` each array stays on its own device, and so
    must its gradient array.
    """
    graph = symbol._graph
    arg_names = [graph.nodes[i].name for i in graph.argument_ids()]
    aux_names = [graph.nodes[i].name for i in graph.aux_ids()]
    arg_list = _as_named_list(args, arg_names, "args", required=True)
    reqs = normalize_grad_req(grad_req, arg_names)
    if args_grad is None:
        grad_list = [None] * len(arg_names)
        reqs = {n: "null" for n in arg_names}
    else:
        grad_list = _as_named_list(args_grad, arg_names, "args_grad", required=False)
        for name, grad in zip(arg_names, grad_list):
            if grad is None:
                reqs[name] = "null"
    aux_list = _as_named_list(aux_states or ([] if not aux_names else None), aux_names,
                              "aux_states", required=True)
    arg_list = [_as_nd(a, ctx) for a in arg_list]
    aux_list = [_as_nd(a, ctx) for a in aux_list]
    grad_list = [None if g is None else _as_nd(g, ctx) for g in grad_list]
    shapes = {n: a.shape for n, a in zip(arg_names, arg_list)}
    shapes.update({n: a.shape for n, a in zip(aux_names, aux_list)})
    types = {n: np.dtype(a.dtype) for n, a in zip(arg_names, arg_list)}
    types.update({n: np.dtype(a.dtype) for n, a in zip(aux_names, aux_list)})
    bound = {n: a.context for n, a in zip(arg_names + aux_names, arg_list + aux_list)}
    placement = placement_for(graph, group2ctx, ctx, bound)
    if placement is None:
        _check_one_context(ctx, arg_names, arg_list, grad_list, reqs, aux_names, aux_list)
    plan = compile_graph(graph, shapes, types, reqs, default_options(), ctx=ctx,
                         placement=placement)
    _check_grads(plan, grad_list, reqs, ctx)
    pool = shared_exec._pool if shared_exec is not None else None
    return Executor(symbol, plan, ctx, arg_list, grad_list, aux_list, pool=pool)


def _check_one_context(ctx: Context, arg_names: list, arg_list: list, grad_list: list,
                       reqs: dict, aux_names: list, aux_list: list) -> None:
    """Without a placement every array must be on the bind's context, as MXNet requires of
    arguments and gradients ("all arguments must be in global context unless group2ctx is
    specified"). MXNet does not check aux states; here one on another device kind or GPU is
    refused too, since an op cannot read it there (one on another CPU id reads fine)."""
    for name, arr in zip(arg_names, arg_list):
        if arr.context != ctx:
            raise BindError("bind: argument '%s' is on %s but the executor binds on %s: every "
                            "argument must be on the bind's context unless group2ctx places "
                            "it (copy it with as_in_context(%s))" % (name, arr.context, ctx,
                                                                     ctx))
    for name, grad in zip(arg_names, grad_list):
        if grad is not None and reqs[name] != "null" and grad.context != ctx:
            raise BindError("bind: gradient array for '%s' is on %s but the executor binds on "
                            "%s: every gradient must be on the bind's context unless group2ctx "
                            "places it" % (name, grad.context, ctx))
    for name, arr in zip(aux_names, aux_list):
        if arr.context.device_typeid != ctx.device_typeid or (
                ctx.device_typeid == 2 and arr.context != ctx):
            raise BindError("bind: aux state '%s' is on %s but the executor binds on %s; bind "
                            "it there" % (name, arr.context, ctx))


def _check_grads(plan: Plan, grad_list: list, reqs: dict, ctx: Context) -> None:
    """Each gradient array `bind` was given fits its argument's shape, and, in a placed plan,
    lives on its argument's device (MXNet refuses one elsewhere too)."""
    for name, grad, eid in zip(plan.arg_names, grad_list, plan.arg_eids):
        if grad is None or reqs[name] == "null":
            continue
        if grad.shape != tuple(plan.shapes[eid]):
            raise BindError("bind: gradient array for '%s' has shape %s, the argument is %s"
                            % (name, grad.shape, plan.shapes[eid]))
        if plan.devices is not None and grad.context != context_of(plan, eid, ctx):
            raise BindError("bind: gradient array for '%s' is on %s but the argument is on %s; "
                            "give it one on %s" % (name, grad.context, plan.devices[eid],
                                                   plan.devices[eid]))


def _as_nd(value, ctx) -> NDArray:
    """`value` as the NDArray the executor holds (a row-sparse or CSR one as it is: the
    executor computes on a dense twin kept in step with it, sparse_binding.py)."""
    if isinstance(value, NDArray):
        return value
    xp = backend.xp_for(ctx)
    with backend.device_scope(ctx):
        return NDArray(xp.asarray(value, dtype=np.float32), ctx)


def _as_named_list(values, names: list, what: str, required: bool) -> list:
    if values is None:
        if required and names:
            raise BindError("bind: %s is required for %s" % (what, ", ".join(names)))
        return [None] * len(names)
    if isinstance(values, dict):
        # MXNet reads the names it needs and ignores the rest; an array under a name the
        # symbol lacks is likely a mistake (a None placeholder, e.g. for an absent bias, not)
        unknown = [k for k, v in values.items() if k not in names and v is not None]
        if unknown:
            warnings.warn("bind: %s names %s, which the symbol does not have; ignored "
                          "(expected: %s)" % (what, unknown, ", ".join(names)), stacklevel=4)
        missing = [n for n in names if n not in values]
        if missing and required:
            raise BindError("bind: %s is missing %s" % (what, ", ".join(missing)))
        return [values.get(n) for n in names]
    values = list(values)
    if len(values) != len(names):
        raise BindError("bind: %s has %d arrays but the symbol has %d (%s)"
                        % (what, len(values), len(names), ", ".join(names)))
    return values
