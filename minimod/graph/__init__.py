"""The graph records every later stage works on, below the symbol API.

- graph.py: `Node`, `Entry` and the frozen, topologically ordered `Graph` (the in-memory twin
  of MXNet's symbol JSON), `topo_sort`, `substitute` and `without_amp_casts` (the graph
  MXNet's `tojson()` writes after AMP);
- attrs.py: the string attributes MXNet keeps on nodes (hidden keys, `__shape__`,
  `__dtype__`);
- jsonfmt.py: MXNet's symbol JSON, written as MXNet 1.9.1 writes it and read in its current
  and legacy forms.

`minimod.symbol` builds graphs for the user; `minimod.passes` compiles them and
`minimod.executor` runs the result. All three import this package, and it imports none of
them, so the pipeline's arrows point one way.
"""
from .attrs import DTYPE_MX_TO_NP, DTYPE_NP_TO_MX, HIDDEN_KEYS, hidden_key, parse_shape_attr
from .graph import AMP_CASTS, Entry, Graph, Node, substitute, topo_sort, without_amp_casts
from .jsonfmt import MXNET_VERSION, graph_from_json, graph_to_json

__all__ = ["Node", "Entry", "Graph", "topo_sort", "substitute", "AMP_CASTS", "without_amp_casts",
           "HIDDEN_KEYS", "hidden_key",
           "DTYPE_MX_TO_NP", "DTYPE_NP_TO_MX", "parse_shape_attr", "graph_to_json",
           "graph_from_json", "MXNET_VERSION"]
