"""Imports every operator family once so that the registry is complete."""
from . import (  # noqa: F401
    contrib,
    correlation,
    custom,
    elemwise,
    im2col,
    linalg,
    linalg_factor,
    loss,
    nn,
    random,
    reduce,
    rnn,
    shape,
    spatial,
    storage,
)
