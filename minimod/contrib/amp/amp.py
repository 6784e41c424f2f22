"""`mx.contrib.amp.amp`: MXNet's automatic mixed precision, not implemented yet.

MXNet's AMP rewrites a symbol so that chosen operators run in float16 (inserting `amp_cast`
nodes) and scales the loss during training. minimod does not do that rewrite: every function
here that would raises NotImplementedError saying so, and `init()` refuses too, so that a
program asking for mixed precision is not silently trained in float32. The module exists so
that programs importing it for one corner load.
"""
from __future__ import annotations

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_symbol", "convert_model",
           "convert_hybrid_block", "convert_bucketing_module", "list_lp16_ops",
           "list_fp32_ops", "list_lp16_fp32_ops", "list_conditional_fp32_ops",
           "list_widest_type_cast", "list_loss_output_functions", "list_lp16_use_fp32_params"]

_WHY = ("minimod does not implement automatic mixed precision yet (mx.contrib.amp.%s); "
        "cast the inputs and parameters yourself (type_dict in simple_bind, Module's "
        "data dtype) to train in float16")


def _refuse(name: str):
    def refuse(*args, **kwargs):
        raise NotImplementedError(_WHY % name)
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = "Not implemented in minimod: raises NotImplementedError."
    return refuse


init = _refuse('init')
init_trainer = _refuse('init_trainer')
scale_loss = _refuse('scale_loss')
unscale = _refuse('unscale')
convert_symbol = _refuse('convert_symbol')
convert_model = _refuse('convert_model')
convert_hybrid_block = _refuse('convert_hybrid_block')
convert_bucketing_module = _refuse('convert_bucketing_module')
list_lp16_ops = _refuse('list_lp16_ops')
list_fp32_ops = _refuse('list_fp32_ops')
list_lp16_fp32_ops = _refuse('list_lp16_fp32_ops')
list_conditional_fp32_ops = _refuse('list_conditional_fp32_ops')
list_widest_type_cast = _refuse('list_widest_type_cast')
list_loss_output_functions = _refuse('list_loss_output_functions')
list_lp16_use_fp32_params = _refuse('list_lp16_use_fp32_params')
