"""`mx.rnn`: recurrent cells that build unrolled symbol graphs, the bucketing sentence iterator
and checkpoint helpers that unpack fused RNN weights.

The graphs the cells build are node for node the ones MXNet 1.9.1's `mx.rnn` builds (same
operators, names and parameter names), so `sym.tojson()` and `list_arguments()` agree with
MXNet and checkpoints move between the two.
"""
from ..checkpoint import load_checkpoint, save_checkpoint  # noqa: F401 - as in mx.rnn
from . import io, rnn, rnn_cell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .rnn_cell import (
    BaseConvRNNCell,
    BaseRNNCell,
    BidirectionalCell,
    ConvGRUCell,
    ConvLSTMCell,
    ConvRNNCell,
    DropoutCell,
    FusedRNNCell,
    GRUCell,
    LSTMCell,
    ModifierCell,
    ResidualCell,
    RNNCell,
    RNNParams,
    SequentialRNNCell,
    ZoneoutCell,
)

__all__ = [
    "io", "rnn", "rnn_cell", "BucketSentenceIter", "encode_sentences", "save_rnn_checkpoint",
    "load_rnn_checkpoint", "do_rnn_checkpoint", "rnn_unroll", "RNNParams", "BaseRNNCell",
    "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell", "SequentialRNNCell", "DropoutCell",
    "ModifierCell", "ZoneoutCell", "ResidualCell", "BidirectionalCell", "BaseConvRNNCell",
    "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
]
