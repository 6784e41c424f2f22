"""What the ranks of a dist store must agree on, and how a disagreement is told
(minimod/kvstore/dist.py checks every collective call's keys, layouts and optimizer)."""
from __future__ import annotations

__all__ = ["optimizer_settings", "describe_difference"]


def optimizer_settings(optimizer) -> list:
    """The plain settings of an optimizer (what must agree across ranks)."""
    out = [("type", type(optimizer).__name__)]
    for name, value in sorted(vars(optimizer).items()):
        if name.startswith("_"):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            out.append((name, repr(value)))
    return out


def describe_difference(mine, other) -> str:
    """The first element of `mine` that differs from `other` (for error messages)."""
    if isinstance(mine, list) and isinstance(other, list):
        for i, item in enumerate(mine):
            if i >= len(other) or item != other[i]:
                return "%r (item %d of %d)" % (item, i, len(mine))
        return "only %d items" % len(mine)
    return repr(mine)
