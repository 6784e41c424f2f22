"""`mx.init`: parameter initializers, MXNet 1.9.1's `mx.initializer`.

An initializer is called as `init(desc, arr)` with the parameter's name (an `InitDesc`, a str
subclass carrying the variable's attributes) and the NDArray to fill in place. The name decides
what to do: an `__init__` attribute on the variable (set by `mx.sym.Variable(..., init=...)`,
JSON like '["zero", {}]') names the initializer outright; otherwise the name's suffix does:
`weight` gets the initializer's own distribution, `bias`/`beta`/`min` 0, `gamma`/`max` 1. Any
other name is an error that names the variable and how to fix it.

Random initializers draw from `minimod.backend.rng(xp)`, the process-wide generator of the
array's backend, so `mx.random.seed(n)` makes initialisation reproducible. The numbers are
minimod's own (MXNet's generator is a different one); distributions and scales are MXNet's.

Where minimod bends MXNet:

* The InitDesc path also knows the BatchNorm statistics `moving_mean`/`moving_avg`/
  `moving_inv_var` (0) and `moving_var` (1), as MXNet's legacy str path does; MXNet relies on
  the symbol attaching an `__init__` attribute to them and fails otherwise.
* Invalid `rnd_type`/`factor_type`/`rand_type` are rejected when the initializer is built, not
  on first use; `Mixed` and `Load` failures name the parameter (MXNet's Mixed message does not).
* `Bilinear` is vectorised; `FusedRNN` initialises the pieces of the flat RNN parameter vector
  in place instead of unpacking, copying and repacking them.

The package: base.py (InitDesc, Initializer, the registry and `create`), builtin.py (Zero, One,
Constant, Uniform, Normal, Orthogonal, Xavier, MSRAPrelu, Bilinear), rnn.py (LSTMBias, FusedRNN,
rnn_param_layout) and named.py (Load, Mixed).
"""
from __future__ import annotations

from .base import InitDesc, InitError, Initializer, alias, create, register
from .builtin import Bilinear, Constant, MSRAPrelu, Normal, One, Orthogonal, Uniform, Xavier, Zero
from .named import Load, Mixed
from .rnn import FusedRNN, LSTMBias, rnn_param_layout

__all__ = [
    "Bilinear", "Constant", "FusedRNN", "InitDesc", "InitError", "Initializer", "LSTMBias",
    "Load", "MSRAPrelu", "Mixed", "Normal", "One", "Orthogonal", "Uniform", "Xavier", "Zero",
    "alias", "create", "register", "rnn_param_layout",
]
