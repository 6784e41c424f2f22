"""MXNet's contrib operators (registered as `_contrib_<Name>`), one module per family."""
from . import (  # noqa: F401
    attention,
    basic,
    boxes,
    deformable,
    hawkes,
    modulated_deformable,
    multibox,
    norm,
    proposal,
    psroi,
    quantization,
    resize,
    roi,
    straight_through,
)
