"""Distributed KVStore over MPI ('dist_sync'): needs the `dist` extra (mpi4py)."""
from __future__ import annotations

from ..base import MXNetError

__all__ = ["create_dist"]


def create_dist(kind: str):
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise MXNetError("kvstore %r needs mpi4py: pip install minimod[dist]" % kind) from None
    raise MXNetError("kvstore %r is not available yet in this version of minimod" % kind)
