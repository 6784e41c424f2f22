"""Test helpers around the process: environment variables, stderr, retries."""
from __future__ import annotations

import contextlib
import functools
import os
import sys

from ..ndarray.ndarray import waitall

__all__ = ["environment", "set_env_var", "discard_stderr", "retry", "is_op_runnable",
           "has_tvm_ops", "is_cd_run"]


def _apply(values: dict) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)


@contextlib.contextmanager
def environment(*args):
    """`with environment('NAME', 'value'):` or `with environment({'A': '1', 'B': None}):`
    sets (None: unsets) environment variables inside the block and restores them after.
    minimod reads its settings from os.environ, so the change is seen at once."""
    if len(args) == 1 and isinstance(args[0], dict):
        values = dict(args[0])
    elif len(args) == 2:
        values = {args[0]: args[1]}
    else:
        raise TypeError("environment takes one dict, or a variable name and a value")
    saved = {name: os.environ.get(name) for name in values}
    _apply(values)
    try:
        yield
    finally:
        waitall()
        _apply(saved)


def set_env_var(key: str, val: str, default_val: str = "") -> str:
    """Set environment variable `key` to `val`; returns its previous value (or
    `default_val` when it was unset)."""
    previous = os.environ.get(key, default_val)
    os.environ[key] = val
    return previous


@contextlib.contextmanager
def discard_stderr():
    """Silence everything written to the process's stderr (file descriptor 2, so C code's
    output too) inside the block."""
    try:
        fileno = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stderr without a descriptor
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fileno)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fileno)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, fileno)
        os.close(saved)


def retry(n: int):
    """Decorator: run a stochastic test up to n times; it fails only if every try fails."""
    if n < 1:
        raise ValueError("retry(n) needs n >= 1, got %d" % n)

    def decorate(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            for attempt in range(n):
                try:
                    return test(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return run
    return decorate


def is_op_runnable() -> bool:
    """True: every minimod operator runs on every context it supports."""
    return True


def has_tvm_ops() -> bool:
    """False: minimod has no TVM-generated operators."""
    return False


def is_cd_run() -> bool:
    """True when the CD_JOB environment variable is "1" (MXNet's delivery runs)."""
    return os.environ.get("CD_JOB") == "1"
