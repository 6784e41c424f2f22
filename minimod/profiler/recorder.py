"""What the profiler records, and the two forms it gives back.

`RECORDER` holds, while the profiler runs, one event per timed thing: an operator step of a
bound executor, an imperative operator call, an executor API call, a user's Task, Frame or
Event, a Counter's value, a Marker, and the memory pool's size when it grows. From them it
writes

- the trace (`trace()`): Chrome's trace-event JSON, MXNet's file format (`{"traceEvents": [...],
  "displayTimeUnit": "ms"}`), one "process" per device or category, named by metadata events;
  open it in chrome://tracing or Perfetto;
- the aggregate statistics (`table()`, `stats()`): per category and name, count, total, min,
  max and mean time in ms (memory in kB), in MXNet's layout.

Timestamps are microseconds since the epoch, taken from `time.perf_counter_ns` against one
reading of the wall clock, so spans are precise and line up with other tools' traces.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Optional

__all__ = ["Recorder", "RECORDER", "SORT_KEYS"]

#: dumps(sort_by=...) -> the statistic it sorts on
SORT_KEYS = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}
MEMORY = "Device Storage"


class Recorder:
    """The event store; `on` is the one flag the hot paths read."""

    def __init__(self):
        self.on = False  # running and not paused
        self.symbolic = self.imperative = self.api = self.memory = False
        self.aggregate = False
        self.events: list = []
        self.spans: dict = {}  # (category, name) -> [count, total, min, max] in ms
        self.levels: dict = {}  # (category, name) -> [count, min, max, sum] in kB
        self._pids: dict = {}
        self._lock = threading.Lock()
        self._perf0 = time.perf_counter_ns()
        self._epoch0 = time.time_ns() // 1000

    # ---------------------------------------------------------------- configuration
    def configure(self, config: dict, running: bool) -> None:
        everything = bool(config.get("profile_all"))
        self.symbolic = everything or bool(config.get("profile_symbolic", True))
        self.imperative = everything or bool(config.get("profile_imperative", True))
        self.api = everything or bool(config.get("profile_api", True))
        self.memory = everything or bool(config.get("profile_memory", True))
        self.aggregate = bool(config.get("aggregate_stats"))
        self.on = running

    # ---------------------------------------------------------------- recording
    def now(self) -> int:
        """A timestamp for `span`: nanoseconds of the performance counter."""
        return time.perf_counter_ns()

    def _us(self, ns: int) -> float:
        return self._epoch0 + (ns - self._perf0) / 1000.0

    def _pid(self, process: str) -> int:
        pid = self._pids.get(process)
        if pid is None:
            pid = self._pids[process] = len(self._pids)
            self.events.append({"ph": "M", "name": "process_name", "pid": pid,
                                "args": {"name": process}})
        return pid

    def span(self, category: str, name: str, start_ns: int, end_ns: int,
             process: Optional[str] = None) -> None:
        """A timed span (ns from `now()`), shown under `process` (default: its category)."""
        ms = (end_ns - start_ns) / 1e6
        with self._lock:
            self.events.append({"name": name, "cat": category, "ph": "X",
                                "ts": self._us(start_ns), "dur": (end_ns - start_ns) / 1000.0,
                                "pid": self._pid(process or category),
                                "tid": threading.get_ident()})
            if self.aggregate:
                stat = self.spans.get((category, name))
                if stat is None:
                    self.spans[(category, name)] = [1, ms, ms, ms]
                else:
                    stat[0] += 1
                    stat[1] += ms
                    stat[2] = min(stat[2], ms)
                    stat[3] = max(stat[3], ms)

    def counter(self, category: str, name: str, value: float, kb: bool = False) -> None:
        """A counter's new value (memory counters in bytes, aggregated in kB)."""
        with self._lock:
            self.events.append({"name": name, "cat": category, "ph": "C",
                                "ts": self._us(self.now()), "args": {name: value},
                                "pid": self._pid(category), "tid": threading.get_ident()})
            if self.aggregate and kb:
                level, stat = value / 1000.0, self.levels.get((category, name))
                if stat is None:
                    self.levels[(category, name)] = [1, level, level, level]
                else:
                    stat[0] += 1
                    stat[1] = min(stat[1], level)
                    stat[2] = max(stat[2], level)
                    stat[3] += level

    def instant(self, category: str, name: str, scope: str) -> None:
        """A marker: one instant, over the process ('p'), thread ('t') or everything ('g')."""
        with self._lock:
            self.events.append({"name": name, "cat": category, "ph": "i", "s": scope,
                                "ts": self._us(self.now()), "pid": self._pid(category),
                                "tid": threading.get_ident()})

    # ---------------------------------------------------------------- reading back
    def trace(self) -> str:
        with self._lock:
            return json.dumps({"traceEvents": list(self.events), "displayTimeUnit": "ms"})

    def clear_events(self) -> None:
        with self._lock:
            self.events = []
            self._pids = {}

    def clear_stats(self) -> None:
        with self._lock:
            self.spans, self.levels = {}, {}

    def _time_rows(self, sort_by: str, ascending: bool) -> dict:
        """{category: [(name, count, total, min, max, avg)]}, rows sorted as asked."""
        key = {"count": 1, "total": 2, "min": 3, "max": 4, "avg": 5}[sort_by]
        out: dict = {}
        for (category, name), (count, total, lo, hi) in self.spans.items():
            out.setdefault(category, []).append((name, count, total, lo, hi, total / count))
        for rows in out.values():
            rows.sort(key=lambda r: r[key], reverse=not ascending)
        return dict(sorted(out.items()))

    def _memory_rows(self) -> list:
        return sorted((name, count, lo, hi, total / count)
                      for (_, name), (count, lo, hi, total) in self.levels.items())

    def table(self, sort_by: str = "total", ascending: bool = False) -> str:
        """The statistics as MXNet's `dumps()` prints them."""
        with self._lock:
            lines = ["", "Profile Statistics:",
                     "\tNote the difference in units for different entries."]
            memory = self._memory_rows()
            if memory:
                lines += [MEMORY, "=" * 17, "Name".ljust(30) + "Total Count".rjust(11)
                          + "".join(h.rjust(17) for h in ("Min Use  (kB)", "Max Use  (kB)",
                                                          "Avg Use  (kB)")),
                          "----".ljust(30) + "-----------".rjust(11)
                          + "".join("-------------".rjust(17) for _ in range(3))]
                lines += [name.ljust(30) + str(count).rjust(11)
                          + "".join(("%.4f" % v).rjust(17) for v in values)
                          for name, count, *values in memory]
                lines.append("")
            for category, rows in self._time_rows(sort_by, ascending).items():
                lines += [category, "=" * 17, "Name".ljust(30) + "Total Count".rjust(11)
                          + "".join(h.rjust(17) for h in ("Time (ms)", "Min Time (ms)",
                                                          "Max Time (ms)", "Avg Time (ms)")),
                          "----".ljust(30) + "-----------".rjust(11)
                          + "".join(("-" * len(h)).rjust(17) for h in (
                              "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"))]
                lines += [name.ljust(30) + str(count).rjust(11)
                          + "".join(("%.4f" % v).rjust(17) for v in values)
                          for name, count, *values in rows]
                lines.append("")
            return "\n".join(lines) + "\n"

    def stats(self, sort_by: str = "total", ascending: bool = False) -> str:
        """The statistics as MXNet's `dumps(format='json')` gives them."""
        with self._lock:
            times = {category: {name: {"Count": count, "Total": round(total, 4),
                                       "Min": round(lo, 4), "Max": round(hi, 4),
                                       "Avg": round(avg, 4)}
                                for name, count, total, lo, hi, avg in rows}
                     for category, rows in self._time_rows(sort_by, ascending).items()}
            memory = {name: {"Count": count, "Min": round(lo, 4), "Max": round(hi, 4),
                             "Avg": round(avg, 4)}
                      for name, count, lo, hi, avg in self._memory_rows()}
            return json.dumps({"Time": times, "Memory": {MEMORY: memory} if memory else {},
                               "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)


RECORDER = Recorder()
