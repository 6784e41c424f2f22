"""`mx.log`: MXNet's logger factory. `get_logger(name)` gives a `logging.Logger` whose stderr
lines read as MXNet's (and glog's): a coloured level letter, the date and time, the process
id and the caller's file:function:line, then the message:

    I1127 08:07:36 13778 train.py:main:42] Epoch[0] ...

Configured once per name, as MXNet's: asking again returns the logger as it is. With
`filename` the messages go to that file, plain. A logger without a name is the root logger,
to which MXNet adds no handler.
"""
from __future__ import annotations

import logging
import os
import warnings
from logging import CRITICAL, DEBUG, ERROR, INFO, NOTSET, WARNING
from typing import Optional

__all__ = ["get_logger", "getLogger", "CRITICAL", "DEBUG", "ERROR", "INFO", "NOTSET",
           "WARNING"]

_COLOURS = {DEBUG: "\x1b[34m", INFO: "\x1b[32m"}  # the others are red
_RESET = "\x1b[0m"


class _Formatter(logging.Formatter):
    """glog's line prefix, coloured by level."""

    def __init__(self):
        super().__init__(datefmt="%m%d %H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        colour = _COLOURS.get(record.levelno, "\x1b[31m")
        prefix = "%s%s%s %d %s:%s:%d]%s" % (colour, record.levelname[0],
                                           self.formatTime(record, self.datefmt), os.getpid(),
                                           record.filename, record.funcName, record.lineno,
                                           _RESET)
        return "%s %s" % (prefix, record.getMessage())


def get_logger(name: Optional[str] = None, filename: Optional[str] = None,
               filemode: Optional[str] = None, level: int = WARNING) -> logging.Logger:
    """The logger `name`, configured the first time it is asked for (see the module doc)."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", False):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    elif name is None:
        logger.setLevel(level)
    return logger


def getLogger(name: Optional[str] = None, filename: Optional[str] = None,
              filemode: Optional[str] = None, level: int = WARNING) -> logging.Logger:
    """Deprecated spelling of get_logger, as in MXNet."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning,
                  stacklevel=2)
    return get_logger(name, filename, filemode, level)
