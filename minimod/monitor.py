"""`mx.monitor.Monitor`: statistics of every intermediate array, every `interval` batches.

Usage as in MXNet: `mon = Monitor(10); mod.fit(..., monitor=mon)`, or by hand
`mon.install(exe); mon.tic(); exe.forward(); exe.backward(); mon.toc_print()`.

The executor calls the installed callback with (name, NDArray) after each step; while the monitor
is active the statistic is computed on the spot (on the array's device, as an NDArray) and queued.
Nothing is read back to the host until `toc()`, which formats the queue.
"""
from __future__ import annotations

import logging
import re
from math import sqrt
from typing import Any, Callable, Optional

from . import ndarray
from .ndarray import NDArray

__all__ = ["Monitor"]


def _rms(x: NDArray) -> NDArray:
    """The default statistic: norm(x) / sqrt(x.size), a root mean square."""
    return ndarray.norm(x) / sqrt(x.size)


class Monitor:
    """Collects `stat_func(array)` for arrays whose name matches `pattern`.

    `tic()` before a batch activates collection every `interval` batches; `toc()` after it
    also adds the arguments and auxiliary states and returns `[(batch, name, text)]`.
    `monitor_all` asks the executor for op inputs as well as outputs.
    """

    def __init__(self, interval: int, stat_func: Optional[Callable] = None, pattern: str = ".*",
                 sort: bool = False, monitor_all: bool = False):
        self.stat_func = _rms if stat_func is None else stat_func
        self.interval = interval
        self.activated = False
        self.queue: list = []
        self.step = 0
        self.exes: list = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: Any, array: NDArray) -> None:
        """The executor callback: queue the statistic of `array` while active."""
        if isinstance(name, bytes):
            name = name.decode("utf-8")
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe: Any) -> None:
        """Attach to an executor (call once per executor, e.g. per device)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        """Start a batch: collect during it if the batch count is a multiple of `interval`."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def _parameter_stats(self) -> None:
        for exe in self.exes:
            symbol = exe._symbol
            named = list(zip(symbol.list_arguments(), exe.arg_arrays))
            named += list(zip(symbol.list_auxiliary_states(), exe.aux_arrays))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))

    def toc(self) -> list:
        """End a batch: `[(batch, name, text)]` of what was collected (empty when inactive)."""
        if not self.activated:
            return []
        self._parameter_stats()
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = [(step, name, _format(stats)) for step, name, stats in self.queue]
        self.queue = []
        return res

    def toc_print(self) -> None:
        """toc(), logged one line per array at INFO."""
        for step, name, text in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))


def _format(stats: Any) -> str:
    """Each statistic as text plus a tab: a scalar for shape (1,), else the array's print."""
    if isinstance(stats, NDArray):
        stats = [stats]
    if not isinstance(stats, list):
        raise AssertionError("stat_func must return an NDArray or a list of NDArrays, got %s"
                             % type(stats).__name__)
    text = ""
    for value in stats:
        if not isinstance(value, NDArray):
            raise AssertionError("stat_func must return NDArrays, got %s"
                                 % type(value).__name__)
        if value.shape == (1,):
            text += str(value.asscalar()) + "\t"
        else:
            text += str(value.asnumpy()) + "\t"
    return text
