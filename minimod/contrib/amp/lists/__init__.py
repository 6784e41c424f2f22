"""MXNet 1.9.1's AMP operator lists (`symbol_fp16`, generated) and the operators whose cast
nodes are named after their outputs (`output_names`, generated); see
tests/data/contrib/gen_amp_lists.py. There is no bfloat16 list: minimod cannot run bfloat16."""
from . import output_names, symbol_fp16

__all__ = ["symbol_fp16", "output_names"]
