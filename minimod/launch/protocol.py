"""What the launcher and the ranks it starts agree on: the flag that makes `python -m
minimod.launch` run a rank, the environment variables naming the launcher's state folder and
host (heartbeats and failure records go there), the prefix of their messages, and LaunchError.
"""
from __future__ import annotations

from ..base import MXNetError

PREFIX = "minimod.launch: "
RANK_FLAG = "--_rank"
STATE_ENV = "MINIMOD_LAUNCH_DIR"
HOST_ENV = "MINIMOD_LAUNCH_HOST"


class LaunchError(MXNetError):
    """Bad launcher arguments, a bad hostfile, or no mpiexec to be found."""
