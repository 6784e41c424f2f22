"""Liveness: the last step that reads each entry."""
from __future__ import annotations

from ..graph import Graph

__all__ = ["last_use"]


def last_use(graph: Graph) -> list:
    """Per entry id, the id of the last node that reads it (-1: nothing reads it).

    Nodes run in graph order, so a node id doubles as the step index.
    """
    table = [-1] * graph.num_entries
    for nid, eids in enumerate(graph.input_eids):
        for eid in eids:
            table[eid] = nid
    return table
