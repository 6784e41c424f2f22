"""`mx.contrib.amp.amp`: automatic mixed precision (AMP), as far as minimod's symbolic stack goes.

What works, as in MXNet 1.9.1:

- `convert_symbol`, `convert_model`, `convert_bucketing_module`: MXNet's offline conversion of a
  float32 network. The converted graph has `amp_cast` / `amp_multicast` nodes where MXNet puts
  them (same nodes, names and order: reduce_precision.py describes the rules), its parameters
  carry MXNet's `__dtype__` attributes, and it binds and runs: the float16 operators
  (Convolution, Deconvolution, FullyConnected, RNN) compute in float16 on NumPy or CuPy, the
  float32 ones (softmax, losses, exp, norms ...) in float32.
- `list_lp16_ops`, `list_fp32_ops`, `list_lp16_fp32_ops`, `list_conditional_fp32_ops`,
  `list_widest_type_cast`, `list_loss_output_functions`, `list_lp16_use_fp32_params`: MXNet's
  float16 lists (lists/symbol_fp16.py holds them whole), restricted to operators minimod
  registers. The conversion accepts any operator of MXNet's lists in its overrides.

What is refused, and why:

- `init()` raises NotImplementedError. MXNet's `init` replaces, process-wide and for good, the
  operator functions of `mx.sym` and `mx.nd` with wrappers that insert casts around every new
  node. In minimod those functions are not the only way nodes are made: Symbol arithmetic
  (`a + b`, `a * 2`), `mx.sym._internal`, and minimod's own code build nodes without going
  through them, so a patched `mx.sym` would cast some graphs and miss others, and the misses
  show up later as float16/float32 clashes at bind time, far from their cause. Build the float32
  network and convert it instead: `convert_symbol(sym)` (or `convert_model` with parameters)
  gives the casts MXNet's own converter places, which are also fewer than `init` inserts.
- `init_trainer`, `scale_loss`, `unscale`, `convert_hybrid_block`: Gluon APIs (dynamic loss
  scaling works on a Gluon Trainer); minimod has no Gluon.
- A bfloat16 target: NumPy and CuPy have no bfloat16 arrays, so nothing could run it.
"""
from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...ops.registry import list_ops
from ...symbol.symbol import Symbol
from .lists import symbol_fp16
from .reduce_precision import param_dtype, reduce_precision, set_param_dtypes

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops",
           "list_fp32_ops", "list_lp16_fp32_ops", "list_conditional_fp32_ops",
           "list_widest_type_cast", "list_loss_output_functions", "list_lp16_use_fp32_params",
           "convert_symbol"]

_NO_BF16 = ("mx.contrib.amp: target_dtype bfloat16 is not supported by minimod (NumPy and CuPy "
            "have no bfloat16 arrays); use target_dtype='float16'")


def _target(target_dtype) -> str:
    """'float16' for a float16 target; refuse bfloat16 and anything else."""
    if isinstance(target_dtype, str) and target_dtype == "bfloat16":
        raise NotImplementedError(_NO_BF16)
    if isinstance(target_dtype, np.dtype) and target_dtype.names == ("bfloat16",):
        raise NotImplementedError(_NO_BF16)  # MXNet's structured stand-in for bfloat16
    try:
        ok = np.dtype(target_dtype) == np.float16
    except TypeError:
        ok = False
    if not ok:
        raise ValueError("mx.contrib.amp: target_dtype must be 'float16' (MXNet also has "
                         "'bfloat16', which minimod cannot run), got %r" % (target_dtype,))
    return "float16"


def _gluon(name: str):
    raise NotImplementedError(
        "mx.contrib.amp.%s works on Gluon (a gluon.Trainer or HybridBlock), which minimod does "
        "not implement; for a symbolic network use amp.convert_symbol / amp.convert_model"
        % name)


# ---------------------------------------------------------------------------------- refused

def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Refused: raises NotImplementedError (see the module docstring for why and what to
    use: build the float32 network, then `convert_symbol` / `convert_model`)."""
    _target(target_dtype)
    raise NotImplementedError(
        "mx.contrib.amp.init() is not supported by minimod: MXNet's init patches the mx.sym "
        "and mx.nd operator functions, which in minimod would miss the nodes that Symbol "
        "arithmetic and internal code create. Build the network in float32 and convert it: "
        "amp.convert_symbol(sym) for a symbol, amp.convert_model(sym, arg_params, aux_params) "
        "with its parameters, amp.convert_bucketing_module(mod) for a BucketingModule")


def init_trainer(optimizer_or_trainer):
    """Refused (Gluon): raises NotImplementedError."""
    _gluon("init_trainer")


def scale_loss(loss, optimizer_or_trainer):
    """Refused (Gluon): raises NotImplementedError."""
    _gluon("scale_loss")


def unscale(optimizer_or_trainer):
    """Refused (Gluon): raises NotImplementedError."""
    _gluon("unscale")


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """Refused (Gluon): raises NotImplementedError."""
    _gluon("convert_hybrid_block")


# ------------------------------------------------------------------------------------ lists

def _registered(names) -> list:
    ops = list_ops()
    return [n for n in names if n in ops]


def list_lp16_ops(target_dtype):
    """Operators that run in float16 (their inputs are cast to it)."""
    _target(target_dtype)
    return _registered(symbol_fp16.FP16_FUNCS)


def list_fp32_ops(target_dtype):
    """Operators that run in float32 (their inputs are cast to it)."""
    _target(target_dtype)
    return _registered(symbol_fp16.FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype):
    """Operators that run in whichever type they are given."""
    _target(target_dtype)
    return _registered(symbol_fp16.FP16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype):
    """(operator, parameter, values): float32 when the parameter takes one of the values."""
    _target(target_dtype)
    ops = list_ops()
    return [rule for rule in symbol_fp16.CONDITIONAL_FP32_FUNCS if rule[0] in ops]


def list_widest_type_cast(target_dtype):
    """Operators whose inputs must share one type: the widest of theirs."""
    _target(target_dtype)
    return _registered(symbol_fp16.WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype):
    """Loss heads whose gradient MXNet's dynamic loss scaling would scale."""
    _target(target_dtype)
    return _registered(symbol_fp16.LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype):
    """Parameters kept in float32 by low-precision operators: none for float16 (None)."""
    _target(target_dtype)
    return None


# ------------------------------------------------------------------------------- conversion

def _str_list(value, what: str) -> list:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("mx.contrib.amp: %s must be a list of str, got %r" % (what, value))
    return value


def _conditional_rules(rules) -> dict:
    """[(op, param, [values])] as {op: {param: values}}."""
    if not isinstance(rules, list):
        raise TypeError("mx.contrib.amp: conditional_fp32_ops must be a list of "
                        "(str, str, list of str), got %r" % (rules,))
    table: dict = {}
    for rule in rules:
        if (not isinstance(rule, (tuple, list)) or len(rule) != 3
                or not isinstance(rule[0], str) or not isinstance(rule[1], str)
                or not isinstance(rule[2], list)):
            raise TypeError("mx.contrib.amp: conditional_fp32_ops must be a list of "
                            "(str, str, list of str), got entry %r" % (rule,))
        table.setdefault(rule[0], {}).setdefault(rule[1], []).extend(rule[2])
    return table


def _check_lists(lp_ops, fp32_ops, conditional_names) -> None:
    for a, b, names in ((lp_ops, fp32_ops, "target_dtype_ops and fp32_ops"),
                        (lp_ops, conditional_names, "target_dtype_ops and conditional_fp32_ops"),
                        (conditional_names, fp32_ops, "fp32_ops and conditional_fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise ValueError("mx.contrib.amp: an operator can be in one list only; %s share %s"
                             % (names, sorted(common)))
    allowed = set(symbol_fp16.FP16_FUNCS + symbol_fp16.FP32_FUNCS + symbol_fp16.FP16_FP32_FUNCS
                  + [rule[0] for rule in symbol_fp16.CONDITIONAL_FP32_FUNCS])
    unknown = set(lp_ops) | set(fp32_ops) | set(conditional_names)
    unknown -= allowed
    if unknown:
        raise ValueError("mx.contrib.amp: operators %s are in none of AMP's lists; choose from "
                         "list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops and "
                         "list_conditional_fp32_ops" % sorted(unknown))


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A copy of float32 symbol `sym` with the casts of mixed precision, as MXNet 1.9.1's
    converter makes it (see reduce_precision.py for the rules).

    Parameters
    ----------
    sym : Symbol
        The float32 network.
    target_dtype : 'float16'
        The low-precision type (bfloat16 is refused: NumPy has none).
    target_dtype_ops, fp32_ops : list of str, optional
        Operators to run in float16 / in float32 (default: MXNet's lists).
    conditional_fp32_ops : list of (str, str, list of str), optional
        (operator, parameter, values) run in float32 when the parameter takes one of the
        values (default: MXNet's list: softrelu Activation, elu and selu LeakyReLU).
    excluded_sym_names : list of str, optional
        Nodes to keep in float32 whatever their operator.
    data_names : list of str, optional
        The network's data inputs, taken to be float32; default: the inputs with no
        `__dtype__` attribute. The other inputs are parameters and get `__dtype__`.
    cast_optional_params : bool
        Store the parameters that feed float16 operators in float16 (no cast node for them;
        their `__dtype__` says float16) instead of casting them on every forward.
    """
    if not isinstance(sym, Symbol):
        raise TypeError("mx.contrib.amp.convert_symbol: the first argument must be a Symbol, "
                        "got %s" % type(sym).__name__)
    low = _target(target_dtype)
    lp_ops = (list(symbol_fp16.FP16_FUNCS) if target_dtype_ops is None
              else _str_list(target_dtype_ops, "target_dtype_ops"))
    fp32 = (list(symbol_fp16.FP32_FUNCS) if fp32_ops is None
            else _str_list(fp32_ops, "fp32_ops"))
    rules = _conditional_rules(list(symbol_fp16.CONDITIONAL_FP32_FUNCS)
                               if conditional_fp32_ops is None else conditional_fp32_ops)
    excluded = ([] if excluded_sym_names is None
                else _str_list(excluded_sym_names, "excluded_sym_names"))
    _check_lists(lp_ops, fp32, list(rules))
    attrs = sym.attr_dict()
    inputs = sym.list_inputs()
    if data_names is None:
        data_names = [name for name in inputs if "__dtype__" not in attrs.get(name, {})]
    else:
        data_names = _str_list(list(data_names), "data_names")
    model_params = sorted(set(inputs) - set(data_names))
    heads = reduce_precision(sym._outputs, low, lp_ops, fp32, symbol_fp16.WIDEST_TYPE_CASTS,
                             rules, excluded, data_names, bool(cast_optional_params))
    set_param_dtypes(heads, data_names, model_params, low, bool(cast_optional_params))
    return Symbol(heads)


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """(converted symbol, arg_params, aux_params): `convert_symbol` with every input that is
    not in `arg_params` or `aux_params` taken as data, and each parameter converted to the
    dtype its `__dtype__` now says. As in MXNet, the two dicts given are updated in place
    (and returned)."""
    if not isinstance(sym, Symbol):
        raise TypeError("mx.contrib.amp.convert_model: the first argument must be a Symbol, "
                        "got %s" % type(sym).__name__)
    for value, what in ((arg_params, "arg_params"), (aux_params, "aux_params")):
        if not isinstance(value, dict):
            raise TypeError("mx.contrib.amp.convert_model: %s must be a dict of name to "
                            "NDArray, got %s" % (what, type(value).__name__))
    if excluded_sym_names is not None:
        _str_list(excluded_sym_names, "excluded_sym_names")
    params = set(arg_params) | set(aux_params)
    data_names = [name for name in sym.list_inputs() if name not in params]
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names, data_names,
                               cast_optional_params)
    attrs = converted.attr_dict()
    for names, table in ((converted.list_arguments(), arg_params),
                         (converted.list_auxiliary_states(), aux_params)):
        for name in names:
            dtype = param_dtype(attrs.get(name, {}))
            if dtype is not None and name in table:
                table[name] = table[name].astype(dtype)
    return converted, arg_params, aux_params


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                             cast_optional_params=False):
    """A new BucketingModule whose every bucket's symbol is converted (`convert_model`, with
    the current module's parameters), built by `BucketingModule.load_dict` with the same
    settings; the parameters are converted in place, as in MXNet."""
    from ...module import BucketingModule
    if not isinstance(bucketing_mod, BucketingModule):
        raise TypeError("mx.contrib.amp.convert_bucketing_module: module should be an instance "
                        "of BucketingModule, got %s" % type(bucketing_mod).__name__)
    if not bucketing_mod._buckets:
        raise MXNetError("mx.contrib.amp.convert_bucketing_module: the BucketingModule has no "
                         "buckets yet (bind it first)")
    if not bucketing_mod.params_initialized:
        raise MXNetError("mx.contrib.amp.convert_bucketing_module: bucketing_mod params "
                         "should be initialized for mixed precision conversion")
    arg_params = bucketing_mod._curr_module._arg_params
    aux_params = bucketing_mod._curr_module._aux_params
    sym_dict = {}
    for key, module in bucketing_mod._buckets.items():
        sym_dict[key], arg_params, aux_params = convert_model(
            module._symbol, arg_params, aux_params, target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops,
            conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(
        sym_dict, sym_gen=bucketing_mod._sym_gen, arg_params=arg_params,
        aux_params=aux_params, default_bucket_key=bucketing_mod._default_bucket_key,
        logger=bucketing_mod.logger, context=bucketing_mod._context,
        work_load_list=bucketing_mod._work_load_list,
        fixed_param_names=bucketing_mod._fixed_param_names,
        state_names=bucketing_mod._state_names, group2ctxs=bucketing_mod._group2ctxs,
        compression_params=bucketing_mod._compression_params)
