"""`mx.test_utils`: the helpers MXNet's test code (and users' own tests) import.

- comparing arrays (`compare.py`): `assert_almost_equal` with MXNet's per-dtype default
  tolerances, `almost_equal`, `same`, `reldiff`, `assert_exception` ...
- test data and the test context (`data.py`): `default_context`, `set_default_context`,
  `rand_ndarray`, `rand_shape_nd`, `random_arrays`, `np_reduce` ...
- checking symbols (`symbolic.py`): `check_symbolic_forward`, `check_symbolic_backward`,
  `check_numeric_gradient`, `check_consistency`, `check_speed`, `simple_forward`
- the process (`process.py`): `environment`, `set_env_var`, `discard_stderr`, `retry`
- data sets from local files (`datasets.py`, `iterators.py`), `compare_optimizer`
  (`optimizers.py`), and minimod's allocation counter (`allocations.py`).

`from mxnet.test_utils import *` in MXNet's tests also brings the modules MXNet's file
imported (`np`, `mx`, `sys`, `logging`, `rnd` for numpy.random, `npt` for numpy.testing) and
`array`/`Symbol`; they are exported here under the same names for that reason.
`minimod.testing` is another name of this package.
"""
import logging
import os
import sys
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import minimod as mx

from ..context import Context, cpu, gpu
from ..ndarray.ndarray import NDArray
from ..ndarray.ndarray import array as array
from ..symbol import Symbol
from ..util import get_cuda_compute_capability, getenv, setenv, use_np, use_np_shape  # noqa: F401
from . import (
    allocations,
    arrays,
    compare,
    data,
    datasets,
    iterators,
    optimizers,
    process,
    statistics,
    symbolic,
)
from .allocations import *  # noqa: F401,F403
from .arrays import *  # noqa: F401,F403
from .compare import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .datasets import *  # noqa: F401,F403
from .iterators import *  # noqa: F401,F403
from .optimizers import *  # noqa: F401,F403
from .process import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .symbolic import *  # noqa: F401,F403
from .symbolic import numeric_grad

__all__ = (allocations.__all__ + arrays.__all__ + statistics.__all__ + compare.__all__
           + data.__all__ + datasets.__all__
           + process.__all__ + iterators.__all__ + optimizers.__all__ + symbolic.__all__
           + ["np", "mx", "os", "sys", "logging", "rnd", "npt", "array", "Symbol", "NDArray",
              "Context", "cpu", "gpu", "contextmanager", "numeric_grad", "use_np",
              "use_np_shape"])
