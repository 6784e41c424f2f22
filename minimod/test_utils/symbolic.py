"""Checking a symbol's forward and backward: against expected arrays, against finite
differences, and across contexts and dtypes.

`location` is the value of every argument of the symbol: a dict name -> array, or a list in
`list_arguments()` order; arrays are NumPy arrays (converted to `dtype` on `ctx`) or NDArrays
(bound as they are). `dtype="asnumpy"` keeps each NumPy array's own dtype. Random data is
drawn from NumPy's global generator in a fixed order (sorted names), as MXNet's helpers draw
it, so a seeded test is reproducible and sees MXNet's numbers.
"""
from __future__ import annotations

import time
from typing import Mapping, Optional, Sequence

import numpy as np

from .. import symbol as sym_mod
from ..ndarray.ndarray import NDArray, waitall
from ..ndarray.ndarray import array as nd_array
from ..ndarray.ndarray import empty as nd_empty
from .compare import as_numpy, assert_almost_equal, default_numeric_eps, get_tolerance, get_tols
from .data import default_context

__all__ = ["simple_forward", "numeric_grad", "check_numeric_gradient",
           "check_symbolic_forward", "check_symbolic_backward", "check_speed",
           "check_consistency"]

_FLOATS = (np.float16, np.float32, np.float64)


def _check_dtype(dtype) -> None:
    if not (dtype == "asnumpy" or dtype in _FLOATS):
        raise ValueError("dtype must be float16, float32, float64 or 'asnumpy', got %r"
                         % (dtype,))


def _as_nd(value, ctx, dtype) -> NDArray:
    if isinstance(value, NDArray):
        return value
    value = np.asarray(value)
    return nd_array(value, ctx=ctx, dtype=value.dtype if dtype == "asnumpy" else dtype)


def parse_location(sym, location, ctx, dtype=np.float32) -> dict:
    """name -> NDArray for every argument of `sym` (a dict must name them all)."""
    names = sym.list_arguments()
    if isinstance(location, Mapping):
        if set(location) != set(names):
            raise ValueError("location names %s but the symbol's arguments are %s"
                             % (sorted(location), sorted(names)))
    else:
        location = dict(zip(names, location))
    return {k: _as_nd(location[k], ctx, dtype) for k in sorted(location)}


def parse_aux_states(sym, aux_states, ctx, dtype=np.float32) -> Optional[dict]:
    """name -> NDArray for the auxiliary states of `sym`, or None when none are given."""
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, Mapping):
        if set(aux_states) != set(names):
            raise ValueError("aux_states names %s but the symbol's auxiliary states are %s"
                             % (sorted(aux_states), sorted(names)))
    else:
        aux_states = dict(zip(names, aux_states))
    return {k: _as_nd(v, ctx, dtype) for k, v in aux_states.items()}


def simple_forward(sym, ctx=None, is_train: bool = False, **inputs):
    """Run `sym` once on the keyword inputs; the output as NumPy (a list for several)."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: nd_array(np.asarray(v), ctx=ctx) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [o.asnumpy() for o in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def numeric_grad(executor, location: dict, aux_states=None, eps: float = 1e-4,
                 use_forward_train: bool = True, dtype=np.float32) -> dict:
    """Central differences of the sum of the executor's outputs (of its one output, as in
    MXNet, for a single-output symbol) with respect to every floating-point array of
    `location` (name -> NumPy array), each element moved by +-eps/2. Integer arguments get a
    zero gradient. The executor's arguments are restored afterwards."""
    grads = {}
    for name, value in location.items():
        value = np.array(value, order="C")
        grad = np.zeros(value.shape, dtype=dtype)
        grads[name] = grad
        if value.dtype.kind != "f":
            continue
        flat = value.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            total = []
            for step in (eps / 2.0, -eps / 2.0):
                flat[i] = old + step
                executor.arg_dict[name][:] = value.astype(dtype)
                if aux_states is not None:
                    for key, aux in aux_states.items():
                        executor.aux_dict[key][:] = aux
                executor.forward(is_train=use_forward_train)
                total.append(sum(o.asnumpy().astype(np.float64).sum()
                                 for o in executor.outputs))
            flat[i] = old
            grad.reshape(-1)[i] = (total[0] - total[1]) / eps
        executor.arg_dict[name][:] = value.astype(dtype)
    return grads


def _grad_requests(sym, grad_nodes) -> dict:
    if grad_nodes is None:
        return {k: "write" for k in sym.list_arguments()}
    if isinstance(grad_nodes, Mapping):
        return dict(grad_nodes)
    if isinstance(grad_nodes, (list, tuple)):
        return {k: "write" for k in grad_nodes}
    raise ValueError("grad_nodes must be None, a list of names or a dict name -> grad_req, "
                     "got %s" % type(grad_nodes).__name__)


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train: bool = True,
                           ctx=None, grad_stype_dict=None, dtype=np.float32) -> None:
    """Assert that backward agrees with finite differences.

    The checked function is sum(output * P) for a random projection P (uniform in
    [0.1, 1.1)); a symbol with several outputs (a Group, which MXNet refuses here) gets one
    projection per output and the sum of them all. Its gradient with respect to each
    argument of `grad_nodes` (default: all; a dict gives each its grad_req: 'write', 'add'
    or 'null') is computed by backward and by central differences with step `numeric_eps`
    (default: 2^-9 in float32, 2^-14 in float64, 2^-6 in float16), then compared with
    `assert_almost_equal`."""
    if dtype not in _FLOATS:
        raise ValueError("check_numeric_gradient: dtype must be float16, float32 or float64")
    for name, stype in (grad_stype_dict or {}).items():  # executors hold gradients dense:
        if stype not in ("default", "row_sparse", "csr"):  # the values are compared
            raise ValueError("check_numeric_gradient: grad_stype_dict[%r] = %r is not "
                             "default, row_sparse or csr" % (name, stype))
    ctx = ctx or default_context()
    location = parse_location(sym, location, ctx, dtype)
    location_np = {k: v.asnumpy() for k, v in location.items()}
    aux = parse_aux_states(sym, aux_states, ctx, dtype)
    aux_np = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    grad_req = _grad_requests(sym, grad_nodes)
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    names = ["__random_proj"] + ["__random_proj%d" % i for i in range(1, len(out_shapes))]
    heads = [sym] if len(out_shapes) == 1 else list(sym)
    losses = [sym_mod.make_loss(h * sym_mod.Variable(n)) for h, n in zip(heads, names)]
    loss = losses[0] if len(losses) == 1 else sym_mod.Group(losses)
    for name, shape in zip(names, out_shapes):
        location[name] = nd_array(np.random.rand(*shape) + 0.1, ctx=ctx, dtype=dtype)
    initial = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_req}
    for name, shape in zip(names, out_shapes):
        initial[name] = np.random.normal(0, 0.01, size=shape)
    args_grad = {k: nd_array(v, ctx=ctx, dtype=dtype) for k, v in initial.items()}
    executor = loss.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req,
                         aux_states=aux)
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float16, np.float32) and eps < 1e-5:
        raise ValueError("check_numeric_gradient: numeric_eps=%g is too small for %s"
                         % (eps, np.dtype(dtype).name))
    executor.backward()
    numeric = numeric_grad(executor, location_np, aux_np, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name, req in grad_req.items():
        got = executor.grad_dict[name].asnumpy()
        if req == "add":
            got = got - initial[name]
        elif req == "null":
            assert_almost_equal(initial[name], got, rtol, atol,
                                ("INITIAL_%s" % name, "BACKWARD_%s" % name))
            continue
        elif req != "write":
            raise ValueError("invalid grad_req %r for argument %s" % (req, name))
        assert_almost_equal(numeric[name], got, rtol, atol,
                            ("NUMERICAL_%s" % name, "BACKWARD_%s" % name))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan: bool = False, dtype=np.float32) -> list:
    """Assert that the outputs of `sym` at `location` (inference mode) equal `expected` (a
    list in output order or a dict by output name); returns the outputs (NDArrays)."""
    _check_dtype(dtype)
    ctx = ctx or default_context()
    location = parse_location(sym, location, ctx, dtype)
    aux = parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, Mapping):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: nd_empty(v.shape, ctx=ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)
             for k, v in location.items()}
    for g in grads.values():
        g[:] = 0
    executor = sym.bind(ctx, args=location, args_grad=grads, aux_states=aux)
    executor.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, executor.outputs):
        assert_almost_equal(want, got, rtol, atol, ("EXPECTED_%s" % name, "FORWARD_%s" % name),
                            equal_nan=equal_nan)
    return executor.outputs


def _as_out_grads(out_grads, ctx, dtype):
    if out_grads is None:
        return None
    if isinstance(out_grads, Mapping):
        return {k: _as_nd(v, ctx, dtype) for k, v in out_grads.items()}
    return [_as_nd(g, ctx, dtype) for g in out_grads]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan: bool = False, dtype=np.float32) -> dict:
    """Assert that backward of `sym` at `location` with head gradients `out_grads` gives the
    `expected` gradients (a list in argument order or a dict by name). The gradient arrays
    start with random values: 'write' must overwrite them, 'add' add to them, 'null' keep
    them. Returns name -> gradient NDArray."""
    _check_dtype(dtype)
    if grad_stypes and any(s not in (None, "default") for s in grad_stypes.values()):
        raise NotImplementedError("check_symbolic_backward: grad_stypes names sparse storage, "
                                  "which minimod does not have")
    ctx = ctx or default_context()
    location = parse_location(sym, location, ctx, dtype)
    aux = parse_aux_states(sym, aux_states, ctx, dtype)
    if not isinstance(expected, Mapping):
        expected = dict(zip(sym.list_arguments(), expected))
    initial = {k: np.random.normal(size=np.shape(expected[k])) for k in sorted(expected)}
    args_grad = {k: nd_array(v, ctx=ctx, dtype=np.asarray(as_numpy(expected[k])).dtype
                             if dtype == "asnumpy" else dtype) for k, v in initial.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in sym.list_arguments()}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(sym.list_arguments(), grad_req))
    executor = sym.bind(ctx, args=location, args_grad=args_grad, aux_states=aux,
                        grad_req=grad_req)
    executor.forward(is_train=True)
    executor.backward(_as_out_grads(out_grads, ctx, dtype))
    for name, want in expected.items():
        req = grad_req[name]
        names = ("EXPECTED_%s" % name, "BACKWARD_%s" % name)
        if req == "write":
            assert_almost_equal(want, args_grad[name], rtol, atol, names, equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(want, args_grad[name].asnumpy() - initial[name], rtol, atol,
                                names, equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(initial[name], args_grad[name], rtol, atol, names,
                                equal_nan=equal_nan)
        else:
            raise ValueError("invalid grad_req %r for argument %s" % (req, name))
    return args_grad


def check_speed(sym, location=None, ctx=None, N: int = 20, grad_req=None, typ: str = "whole",
                **kwargs) -> float:
    """Seconds per run of `sym`: forward+backward (`typ='whole'`) or forward only
    (`typ='forward'`), averaged over N runs after one warm-up. Shapes come from `location`
    (name -> NumPy array) or from `kwargs` (name -> shape, random normal data)."""
    if typ not in ("whole", "forward"):
        raise ValueError("check_speed: typ must be 'whole' or 'forward', got %r" % (typ,))
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(ctx, grad_req=grad_req, **kwargs)
        location = {k: np.random.normal(size=a.shape, scale=1.0)
                    for k, a in exe.arg_dict.items()}
    else:
        exe = sym.simple_bind(ctx, grad_req=grad_req,
                              **{k: v.shape for k, v in location.items()})
    for name, value in location.items():
        exe.arg_dict[name][:] = np.asarray(value).astype(exe.arg_dict[name].dtype)
    train = typ == "whole"

    def run():
        exe.forward(is_train=train)
        if train:
            exe.backward(out_grads=exe.outputs)

    run()
    waitall()
    tic = time.time()
    for _ in range(N):
        run()
    waitall()
    return (time.time() - tic) / N


def _smaller_dtype(a, b):
    """The less precise of two dtypes (b may be None)."""
    if b is None or np.dtype(a).itemsize < np.dtype(b).itemsize:
        return a
    return b


def check_consistency(sym, ctx_list: Sequence[dict], scale: float = 1.0, grad_req="write",
                      arg_params=None, aux_params=None, rtol=None, atol=None,
                      raise_on_err: bool = True, ground_truth=None, equal_nan: bool = False,
                      use_uniform: bool = False, rand_type=np.float64) -> dict:
    """Run `sym` (or one symbol per entry) under every entry of `ctx_list` (each a dict with
    'ctx', shapes by name and optionally 'type_dict') on the same random inputs, and assert
    that outputs (inference and training) and gradients agree with the most precise entry's,
    within the tolerances of each entry's dtype. Returns the reference entry's
    name -> NDArray of outputs and gradients (or `ground_truth` when given)."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency compares at least two entries, got %d"
                         % len(ctx_list))
    syms = [sym] * len(ctx_list) if isinstance(sym, sym_mod.Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError("check_consistency: %d symbols for %d entries"
                         % (len(syms), len(ctx_list)))
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    executors = []
    for s, entry in zip(syms, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ValueError("check_consistency: the symbols differ in arguments or outputs")
        entry = dict(entry)
        executors.append(s.simple_bind(entry.pop("ctx", default_context()),
                                       grad_req=grad_req, **entry))
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name in sorted(executors[0].arg_dict):
        if name not in arg_params:
            shape = executors[0].arg_dict[name].shape
            if use_uniform:
                value = np.random.uniform(-0.92 * scale, 0.92 * scale, size=shape)
            else:
                value = np.random.normal(size=shape, scale=scale)
            arg_params[name] = value.astype(rand_type)
    for name in executors[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in executors:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in executors]
    ref = int(np.argmax([d.itemsize for d in dtypes]))
    truth = ground_truth
    if truth is None:
        truth = dict(executors[ref].output_dict)
        if grad_req != "null":
            truth.update(executors[ref].grad_dict)

    def compare(got, want, rt, at, what):
        try:
            assert_almost_equal(got, want, rtol=rt, atol=at, equal_nan=equal_nan,
                                names=(what + " (entry %d)" % i, "reference (entry %d)" % ref))
        except AssertionError:
            if raise_on_err:
                raise

    for exe in executors:
        exe.forward(is_train=False)
    for i, exe in enumerate(executors):
        if i != ref:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, truth[name], rtol, atol, "inference output " + name)
    if grad_req == "null":
        return truth
    for exe in executors:
        exe.forward(is_train=True)
    head_dtypes = [o.dtype for o in executors[0].outputs]
    for exe in executors:
        head_dtypes = [_smaller_dtype(o.dtype, d) for o, d in zip(exe.outputs, head_dtypes)]
    heads = [o.asnumpy().astype(d) for o, d in zip(executors[0].outputs, head_dtypes)]
    for exe in executors:
        exe.backward([nd_array(h, ctx=o.context, dtype=o.dtype)
                      for h, o in zip(heads, exe.outputs)])
    for i, exe in enumerate(executors):
        if i == ref:
            continue
        for name, arr in zip(output_names + arg_names, exe.outputs + exe.grad_arrays):
            want = truth[name]
            if want is None:
                if arr is not None:
                    raise AssertionError("%s has a gradient in entry %d but not in the "
                                         "reference" % (name, i))
                continue
            rt, at = rtol, atol
            small_got, small_want = _smaller_dtype(arr.dtype, dtypes[i]), \
                _smaller_dtype(want.dtype, dtypes[ref])
            if small_got != arr.dtype or small_want != want.dtype:
                rt, at = get_tols(np.zeros(1, small_got), np.zeros(1, small_want), rtol, atol)
            compare(arr, want, rt, at, "training " + name)
    return truth
