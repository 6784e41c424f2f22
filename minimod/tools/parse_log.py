"""parse_log: a training log's per-epoch metrics as a table, as MXNet's tools/parse_log.py.

    python -m minimod.tools.parse_log train.log [--metric-names accuracy top_k_accuracy_5]
                                                [--format markdown|none]

Reads the lines `Module.fit` logs (minimod's and MXNet's are the same): `Epoch[N]
Train-<metric>=<value>`, `Epoch[N] Validation-<metric>=<value>` and `Epoch[N] Time cost=<s>`.
Several lines for one epoch and column (one per worker of a distributed job) are averaged.
Prints one row per epoch, numbered from 1: a Markdown table, or tab-separated columns with
`--format none`. Where MXNet's script fails on an epoch missing a column (a run without
validation data divides by zero), this prints "-" in that cell.
"""
from __future__ import annotations

import argparse
import re
import sys

__all__ = ["parse", "format_table", "main"]


def parse(lines, metric_names) -> dict:
    """{epoch: [mean of each column or None]}: the columns are train-<metric> for each metric,
    val-<metric> for each metric, then the time."""
    patterns = ([re.compile(r".*Epoch\[(\d+)\] Train-%s.*=([.\d]+)" % re.escape(m))
                 for m in metric_names]
                + [re.compile(r".*Epoch\[(\d+)\] Validation-%s.*=([.\d]+)" % re.escape(m))
                   for m in metric_names]
                + [re.compile(r".*Epoch\[(\d+)\] Time.*=([.\d]+)")])
    sums: dict = {}
    for line in lines:
        for column, pattern in enumerate(patterns):
            match = pattern.match(line)
            if match:
                totals = sums.setdefault(int(match.group(1)), [[0.0, 0] for _ in patterns])
                totals[column][0] += float(match.group(2))
                totals[column][1] += 1
                break
    return {epoch: [total / count if count else None for total, count in columns]
            for epoch, columns in sums.items()}


def format_table(data: dict, metric_names, fmt: str = "markdown") -> str:
    heads = (["train-" + m for m in metric_names] + ["val-" + m for m in metric_names]
             + ["time"])

    def cell(value, last):
        if value is None:
            return "-"
        return "%.1f" % value if last else "%f" % value

    rows = [["%2d" % (epoch + 1)] + [cell(v, i == len(values) - 1)
                                     for i, v in enumerate(values)]
            for epoch, values in data.items()]
    if fmt == "none":
        return "\n".join("\t".join(r) for r in [["epoch"] + heads] + rows) + "\n"
    lines = ["| epoch | " + " | ".join(heads) + " |", "| --- " * (len(heads) + 1) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Parse a training log into a table of its "
                                            "per-epoch metrics")
    p.add_argument("logfile", help="the log file")
    p.add_argument("--format", default="markdown", choices=["markdown", "none"])
    p.add_argument("--metric-names", nargs="+", default=["accuracy"],
                   help="the metrics to read (their names in the log)")
    args = p.parse_args(argv)
    with open(args.logfile) as f:
        data = parse(f, args.metric_names)
    sys.stdout.write(format_table(data, args.metric_names, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
