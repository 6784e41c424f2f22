"""`_foreach`, the node `mx.sym.contrib.foreach` makes: a loop over axis 0 of its data whose
body is a graph of its own (the node's subgraph, `op.subgraphs[0]`).

Its inputs are the data arrays, the initial loop states, then what else the body reads (the
body's other variables, and values it takes from outside the loop), in that order; where each
one enters the body is given by the positions, among the body's variables, of `in_data_locs`,
`in_state_locs` and `remain_locs`. Its outputs are the body's first `num_out_data` outputs,
stacked over the steps along a new axis 0, then the loop states after the last step.

The node never runs as it is: its shapes and dtypes are inferred through the body
(`minimod.passes.infer`), and the compiler unrolls it, once the data's length is known, into
one copy of the body per step (`minimod.passes.control_flow`); the gradient pass and the
memory plan then see an ordinary graph. `subgraphs` is set by the symbol frontend
(`minimod.symbol.control_flow`) or the JSON reader, not from string attributes.
"""
from __future__ import annotations

import dataclasses

from ..base import GraphError
from .helpers import param_error
from .registry import Op, register

__all__ = ["Foreach"]


@dataclasses.dataclass(frozen=True)
class ForeachAttrs:
    num_args: int
    num_outputs: int
    num_out_data: int
    in_state_locs: tuple[int, ...] = ()
    in_data_locs: tuple[int, ...] = ()
    remain_locs: tuple[int, ...] = ()


@register
class Foreach(Op):
    """A loop over axis 0 of its data (see the module docstring)."""

    name = "_foreach"
    Attrs = ForeachAttrs
    VARIADIC_CALL = True  # as MXNet's `_internal._foreach(subgraph, *inputs, **params)`

    def __init__(self, attrs=None):
        super().__init__(attrs)
        a = self.attrs
        locs = list(a.in_data_locs) + list(a.in_state_locs) + list(a.remain_locs)
        # MXNet counts the subgraph among num_args
        if a.num_args != len(locs) + 1 or sorted(locs) != list(range(len(locs))):
            raise param_error(self.name, "num_args=%d and the locations %s do not describe "
                              "the body's inputs" % (a.num_args, (a.in_data_locs,
                                                                  a.in_state_locs,
                                                                  a.remain_locs)))
        if not a.in_data_locs:
            raise param_error(self.name, "the loop needs data (in_data_locs is empty)")
        if not 0 <= a.num_out_data <= a.num_outputs or \
                a.num_outputs - a.num_out_data != len(a.in_state_locs):
            raise param_error(self.name, "num_outputs=%d, num_out_data=%d and %d loop states "
                              "disagree" % (a.num_outputs, a.num_out_data,
                                            len(a.in_state_locs)))

    @property
    def body(self):
        if not self.subgraphs:
            raise GraphError("_foreach node has no body graph (a subgraph) attached")
        return self.subgraphs[0]

    def arguments(self) -> list:
        return ["data%d" % i for i in range(self.attrs.num_args - 1)]

    def outputs(self) -> list:
        return ["output%d" % i for i in range(self.attrs.num_outputs)]

    def input_roles(self) -> list:
        """(role, index among the body's variables) per input: role 'data', 'state' or
        'remain'."""
        a = self.attrs
        return ([("data", loc) for loc in a.in_data_locs]
                + [("state", loc) for loc in a.in_state_locs]
                + [("remain", loc) for loc in a.remain_locs])

    def _not_here(self, *args, **kwargs):
        raise GraphError("_foreach is unrolled by the compiler and inferred through its body "
                         "(minimod.passes); it has no kernel of its own")

    infer_shape = infer_type = forward = backward = _not_here
