"""Write minimod/contrib/amp/lists/{symbol_fp16,output_names}.py from MXNet 1.9.1.

Run with an MXNet 1.9.1 environment (not needed by the tests), from the repository root:
    MXNET_MKLDNN_ENABLED=0 python tests/data/contrib/gen_amp_lists.py

symbol_fp16.py: MXNet's float16 AMP operator lists (`mxnet.contrib.amp.lists.symbol_fp16`), in
MXNet's order. minimod's `amp.list_*` functions keep the entries minimod registers.

output_names.py: the operators whose cast nodes MXNet names after the output ("fc1_output_
amp_cast_float16", "slice_output1_...") rather than the output's index ("flat_0_..."). MXNet
decides by whether the operator declares output names (nnvm's FListOutputNames), which no API
reports, so each operator is probed: a node of it with variable inputs (and a placeholder for
each required parameter) is converted with empty op lists, so that every graph output gets a
float32 cast named "<node><suffix>_amp_cast_float32", and the suffix is read back.
"""
import ctypes
import json
import os
import re
import sys
import textwrap

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")

import mxnet as mx  # noqa: E402
from mxnet import base as mxb  # noqa: E402
from mxnet.contrib import amp  # noqa: E402
from mxnet.contrib.amp.lists import symbol_fp16 as fp16  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
OUT = os.path.join(ROOT, "minimod", "contrib", "amp", "lists")

# Operators that crash MXNet's process when composed from bare variables, families minimod
# does not have (gradients, subgraphs, numpy, sparse, quantisation), and control flow.
SKIP = {"_NDArray", "_Native", "_while_loop", "_foreach", "_cond", "reset_arrays",
        "_contrib_dgl_csr_neighbor_non_uniform_sample", "_CachedOp", "_CachedOpThreadSafe",
        "_CustomFunction", "Custom"}
SKIP_PREFIXES = ("_backward", "_sg_", "_np", "_contrib_quantize", "_contrib_quantized",
                 "_contrib_dequantize", "_sparse_")
# Named outputs that the probe cannot see: Pooling's probe trips over its optional kernel in
# the frontend, and Custom's names come from the user's CustomOpProp.list_outputs.
KNOWN_NAMED = {"Pooling", "Pooling_v1", "Custom"}


def all_op_names():
    plist = ctypes.POINTER(ctypes.c_char_p)()
    size = ctypes.c_uint()
    mxb.check_call(mxb._LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    return sorted(mxb.py_str(plist[i]) for i in range(size.value))


def op_info(name):
    handle = mxb.OpHandle()
    mxb.check_call(mxb._LIB.NNGetOpHandle(mxb.c_str(name), ctypes.byref(handle)))
    real, desc, num = ctypes.c_char_p(), ctypes.c_char_p(), mxb.mx_uint()
    names = ctypes.POINTER(ctypes.c_char_p)()
    types = ctypes.POINTER(ctypes.c_char_p)()
    descs = ctypes.POINTER(ctypes.c_char_p)()
    key_var, ret = ctypes.c_char_p(), ctypes.c_char_p()
    mxb.check_call(mxb._LIB.MXSymbolGetAtomicSymbolInfo(
        handle, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(num), ctypes.byref(names),
        ctypes.byref(types), ctypes.byref(descs), ctypes.byref(key_var), ctypes.byref(ret)))
    args = [(mxb.py_str(names[i]), mxb.py_str(types[i])) for i in range(num.value)]
    return handle, args, mxb.py_str(key_var.value) if key_var.value else ""


def placeholder(type_text):
    if type_text.startswith("Shape") or "tuple" in type_text.lower():
        return "(1, 1)"
    if type_text.startswith(("int", "long")):
        return "2"
    if type_text.startswith(("float", "double")):
        return "1.0"
    if type_text.startswith("boolean"):
        return "False"
    if type_text.startswith("{"):
        options = re.findall(r"'([^']*)'", type_text)
        return "float32" if "float32" in options else options[0]
    return "1"


def compose(handle, params, n_inputs):
    keys = list(params)
    out = mxb.SymbolHandle()
    values = [params[k] for k in keys]
    mxb.check_call(mxb._LIB.MXSymbolCreateAtomicSymbol(
        handle, mxb.mx_uint(len(keys)), mxb.c_str_array(keys), mxb.c_str_array(values),
        ctypes.byref(out)))
    sym = mx.sym.Symbol(out)
    sym._compose(*[mx.sym.var("v%d" % i) for i in range(n_inputs)], name="node")
    return sym


def output_suffixes(name):
    """The cast-name suffix MXNet gives each visible output of operator `name` (None when
    the probe cannot build or convert a node of it)."""
    handle, args, key_var = op_info(name)
    n_inputs, params = 0, {}
    for arg, type_text in args:
        if type_text.startswith("NDArray-or-Symbol[]"):
            n_inputs += 2
            if key_var:
                params[key_var] = "2"
        elif type_text.startswith("NDArray-or-Symbol"):
            n_inputs += 1
        elif "required" in type_text and arg not in params:
            params[arg] = placeholder(type_text)
    sym = None
    for n in range(n_inputs, -1, -1):  # optional inputs (a bias, a length) may not be wanted
        try:
            sym = compose(handle, params, n)
            break
        except mx.base.MXNetError:
            continue
    if sym is None:
        return None
    group = mx.sym.Group([sym[i] for i in range(len(sym.list_outputs()))])
    kwargs = dict(target_dtype_ops=[], fp32_ops=[], conditional_fp32_ops=[])
    try:
        try:
            conv = amp.convert_symbol(group, data_names=[], **kwargs)
        except mx.base.MXNetError:  # an op that needs a known input dtype: float32 data
            conv = amp.convert_symbol(group, **kwargs)
    except mx.base.MXNetError:
        return None
    graph = json.loads(conv.tojson(remove_amp_cast=False))
    suffixes = []
    for head in graph["heads"]:
        node = graph["nodes"][head[0]]
        suffixes.append(node["name"][len("node"):-len("_amp_cast_float32")]
                        if node["op"] == "amp_cast" else None)
    return suffixes


def wrapped(names, indent=4):
    text = ", ".join(repr(n) for n in names)
    return textwrap.fill(text, 96, initial_indent=" " * indent, subsequent_indent=" " * indent)


def write_lists():
    lists = [("FP16_FUNCS", "run in float16: their inputs are cast to float16"),
             ("FP16_FP32_FUNCS", "run in either type: left alone"),
             ("FP32_FUNCS", "run in float32: their inputs are cast to float32"),
             ("WIDEST_TYPE_CASTS", "need one type over all inputs: the widest of them")]
    parts = ['"""MXNet 1.9.1\'s float16 AMP operator lists (generated by '
             'tests/data/contrib/gen_amp_lists.py;\ndo not edit). minimod\'s `amp.list_*` '
             'functions return the entries minimod registers."""\n']
    for name, meaning in lists:
        parts.append("\n# operators that %s\n%s = [\n%s\n]\n"
                     % (meaning, name, wrapped(getattr(fp16, name))))
    cond = ",\n".join("    (%r, %r, %r)" % tuple(c) for c in fp16.CONDITIONAL_FP32_FUNCS)
    parts.append("\n# (operator, parameter, values): float32 when the parameter takes one of "
                 "the values\nCONDITIONAL_FP32_FUNCS = [\n%s,\n]\n" % cond)
    parts.append("\n# loss heads whose gradient AMP's loss scaling would scale\n"
                 "LOSS_OUTPUT_FUNCTIONS = [\n%s\n]\n" % wrapped(fp16.LOSS_OUTPUT_FUNCTIONS))
    with open(os.path.join(OUT, "symbol_fp16.py"), "w") as f:
        f.write("".join(parts))


def write_output_names():
    named = set(KNOWN_NAMED)
    failed = []
    for name in all_op_names():
        if name in SKIP or name.startswith(SKIP_PREFIXES):
            continue
        suffixes = output_suffixes(name)
        if suffixes is None:
            failed.append(name)
        elif any(s is not None and not s[1:].isdigit() for s in suffixes):
            named.add(name)
    body = wrapped(sorted(named))
    with open(os.path.join(OUT, "output_names.py"), "w") as f:
        f.write('"""Operators (and aliases) whose outputs MXNet 1.9.1 names when it names an '
                'AMP cast node\n(generated by tests/data/contrib/gen_amp_lists.py; do not '
                'edit). A cast of output i of\nany other operator is named '
                '"<node>_<i>_amp_cast_<dtype>"."""\n\nOPS_WITH_OUTPUT_NAMES = frozenset([\n'
                '%s\n])\n' % body)
    print("named:", len(named), "not probed:", failed, file=sys.stderr)


if __name__ == "__main__":
    write_lists()
    write_output_names()
