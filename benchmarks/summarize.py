"""Turn run_all.sh's JSON lines into Markdown tables.

    python3 benchmarks/summarize.py results/raw.jsonl [more.jsonl ...] > results/results.md

Per workload (net family and batch; `lstm` and `lstm_fused` share the LSTM workload) one row per
peer: samples/s as the median over rounds [min-max over rounds], ms/step and peak RSS (medians),
and same-round ratios, each a median [min-max] over the rounds that have both runs:
  x MXNet       samples/s / MXNet Module's (for the LSTM: the unrolled mx.rnn.LSTMCell Module)
  x PyTorch     samples/s / PyTorch eager's (for the LSTM: nn.LSTM)
  x hand NumPy  samples/s / the hand-written NumPy step's (bench_numpy.py; training only)
A round is one run_all.sh round within one input file. Runs that failed or were noisy (fewer
than 3 quiet windows) are counted; noisy runs still enter the medians.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict

ORDER = ["minimod_module", "minimod_module_fused", "minimod_fit", "minimod_infer",
         "mxnet_module", "mxnet_module_fused", "mxnet_fit", "mxnet_infer", "torch",
         "torch_lstmcell", "torch_infer", "numpy_hand"]
TITLES = {
    ("mlp", 128, "train"): "MLP 784-512-512-10, batch 128, training",
    ("mlp", 32, "train"): "MLP 784-512-512-10, batch 32, training",
    ("lenet", 64, "train"): "LeNet (tanh), batch 64, training",
    ("lstm", 32, "train"): "LSTM LM (vocab 2000, embed 200, hidden 200, T=35), batch 32, "
                           "training (BucketingModule)",
    ("sdnet", 128, "train"): "Stochastic-depth net (SequentialModule of 6 residual "
                             "conv3x3x16 + BatchNorm modules) on 1x28x28, batch 128, training",
    ("w2v_nce", 256, "train"): "word2vec CBOW with NCE (vocab 50000, dim 100, 1 + 5 "
                               "samples), batch 256, training",
    ("lstm_nce", 32, "train"): "LSTM LM with NCE (vocab 50000, embed/hidden 200, T=35, "
                               "1 + 5 samples), batch 32, training",
    ("mlp", 128, "infer"): "MLP 784-512-512-10, batch 128, inference",
    ("lenet", 64, "infer"): "LeNet (tanh), batch 64, inference",
}
# the peer each table's ratios divide by
REFS = {"train": ("mxnet_module", "torch"), "infer": ("mxnet_infer", "torch_infer")}
# Medians of 8 rounds from shared/reference/performance-anchors.md (same machine, 2 threads).
ANCHORS = {
    ("mlp", 128, "train"): {"mxnet_module": 20463, "mxnet_fit": 12583, "torch": 24870,
                            "numpy_hand": 22913},
    ("mlp", 32, "train"): {"mxnet_module": 6888, "torch": 10877, "numpy_hand": 9333},
    ("lenet", 64, "train"): {"mxnet_module": 3072, "torch": 2721, "numpy_hand": 3008},
    ("lstm", 32, "train"): {"mxnet_module": 382, "mxnet_module_fused": 682, "torch": 714,
                            "torch_lstmcell": 411},
}



def _how_run(runs) -> str:
    """How a round's peers shared the machine (the `lockstep` field of the JSON lines)."""
    flags = {bool(r.get("lockstep")) for r in runs}
    if flags == {True}:
        return ("Within a round, each workload's peers ran in lockstep (lockstep.py: "
                "concurrent processes taking turns, one timing window each), so a round's "
                "ratios compare the same seconds of the machine.")
    if flags == {False}:
        return ("Within a round, the peers ran one after the other, so a round's ratios "
                "compare runs up to minutes apart.")
    return "Some rounds ran their peers in lockstep (lockstep.py), others one after the other."

def peer_of(rec: dict) -> str:
    lib, net, mode = rec["lib"], rec["net"], rec.get("mode", "module")
    if lib == "numpy":
        return "numpy_hand"
    if mode == "infer":
        return lib + "_infer"
    if lib == "torch":
        return "torch_lstmcell" if net == "lstm" else "torch"
    if mode == "fit":
        return lib + "_fit"
    return lib + ("_module_fused" if net == "lstm_fused" else "_module")


def family_of(net: str) -> str:
    return "lstm" if net in ("lstm", "lstm_fused") else net


def fmt_n(x: float) -> str:
    return "{:,.0f}".format(x) if x >= 100 else "{:.1f}".format(x)


def fmt_range(vals: list, ratio: bool = False) -> str:
    f = (lambda v: "%.2f" % v) if ratio else fmt_n
    return "%s [%s-%s]" % (f(statistics.median(vals)), f(min(vals)), f(max(vals)))


def load(paths: list) -> tuple:
    runs, failed = [], defaultdict(int)
    for i, path in enumerate(paths):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                rec["_round"] = (i, rec.get("round", 0))
                rec["_wl"] = (family_of(rec["net"]), rec["batch"],
                              "infer" if rec.get("mode") == "infer" else "train")
                rec["_peer"] = peer_of(rec)
                if "error" in rec:
                    failed[(rec["_wl"], rec["_peer"])] += 1
                else:
                    runs.append(rec)
    return runs, failed


def main(paths: list) -> str:
    runs, failed = load(paths)
    # (workload, peer) -> round -> record (the last one if a round holds several)
    table = defaultdict(dict)
    for rec in runs:
        table[(rec["_wl"], rec["_peer"])][rec["_round"]] = rec
    workloads = sorted({wl for wl, _ in table} | {wl for wl, _ in failed},
                       key=lambda w: (list(TITLES).index(w) if w in TITLES else 99, w))
    n_rounds = len({rec["_round"] for rec in runs})
    out = ["## Throughput", "",
           "Inputs: %s; %d runs in %d rounds%s." % (", ".join(paths), len(runs), n_rounds,
                                                    "; %d failed runs" % sum(failed.values())
                                                    if failed else ""),
           "", "float32, synthetic data, warm; a training step = forward + backward + "
           "SGD-momentum update, an inference step = one forward pass in inference mode. "
           "samples/s = median over rounds of each run's median over its quiet "
           "windows, [min-max] over rounds. 'x MXNet' / 'x PyTorch' = per-round ratio of "
           "samples/s to MXNet Module / PyTorch eager in the same round (LSTM: to the "
           "unrolled mx.rnn.LSTMCell BucketingModule / to nn.LSTM; inference: to MXNet's / "
           "PyTorch's inference), median [min-max] over rounds. peak RSS = ru_maxrss of the "
           "benchmark process (import + everything it allocated). 'numpy_hand' = the "
           "hand-written NumPy step (bench_numpy.py: the same arithmetic with preallocated "
           "buffers and no framework; for the LSTM the fused RNN's arithmetic), the floor of "
           "an engine over NumPy; 'x hand NumPy' = per-round ratio to it. "
           "'anchor' = the reference median measured on this machine before minimod "
           "(performance-anchors.md): a peer far below its anchor means the machine was in "
           "its slow mode. %s" % _how_run(runs), ""]
    threads = sorted({r.get("threads") for r in runs}, key=str)
    if threads != [2]:
        out += ["**Warning: runs used %s threads; the anchors and the intended setup use 2, "
                "so the 'anchor' column does not apply.**" % threads, ""]
    per_round_lines = []
    for wl in workloads:
        title = TITLES.get(wl, "%s, batch %d, %s" % wl)
        out += ["### %s" % title, "",
                "| peer | samples/s median [min-max] | ms/step | peak RSS MB | x MXNet "
                "| x MXNet same API | x PyTorch | x hand NumPy | anchor samples/s "
                "| rounds (noisy, failed) |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        peers = sorted({p for w, p in table if w == wl} | {p for w, p in failed if w == wl},
                       key=lambda p: (ORDER.index(p) if p in ORDER else 99, p))
        mx_ref, pt_ref = REFS[wl[2]]
        mx_runs = table.get((wl, mx_ref), {})
        pt_runs = table.get((wl, pt_ref), {})
        hand_runs = table.get((wl, "numpy_hand"), {}) if wl[2] == "train" else {}
        for peer in peers:
            by_round = table.get((wl, peer), {})
            recs = [by_round[r] for r in sorted(by_round)]
            nfail = failed.get((wl, peer), 0)
            if not recs:
                out.append("| %s | - | - | - | - | - | - | - | - | 0 (0, %d) |" % (peer, nfail))
                continue
            sps = [r["samples_per_s"] for r in recs]
            ms = statistics.median(r["ms_per_step"] for r in recs)
            rss = statistics.median(r["peak_rss_mb"] for r in recs)
            x_mx = [by_round[r]["samples_per_s"] / mx_runs[r]["samples_per_s"]
                    for r in by_round if r in mx_runs]
            x_pt = [by_round[r]["samples_per_s"] / pt_runs[r]["samples_per_s"]
                    for r in by_round if r in pt_runs]
            x_hand = [by_round[r]["samples_per_s"] / hand_runs[r]["samples_per_s"]
                      for r in by_round if r in hand_runs]
            # minimod's fit against MXNet's fit, fused RNN against MXNet's fused RNN
            twin = table.get((wl, "mxnet" + peer[len("minimod"):]), {}) \
                if peer.startswith("minimod") else {}
            x_twin = [by_round[r]["samples_per_s"] / twin[r]["samples_per_s"]
                      for r in by_round if r in twin]
            noisy = sum(1 for r in recs if r.get("noisy"))
            anchor = ANCHORS.get(wl, {}).get(peer)
            out.append("| %s | %s | %.2f | %.0f | %s | %s | %s | %s | %s | %d (%d, %d) |" % (
                peer, fmt_range(sps), ms, rss,
                fmt_range(x_mx, True) if x_mx else "-",
                fmt_range(x_twin, True) if x_twin else "-",
                fmt_range(x_pt, True) if x_pt else "-",
                fmt_range(x_hand, True) if x_hand else "-",
                "{:,}".format(anchor) if anchor else "-", len(recs), noisy, nfail))
            per_round_lines.append("- %s b%d %s %s: %s" % (wl[0], wl[1], wl[2], peer, ", ".join(
                fmt_n(r["samples_per_s"]) + ("*" if r.get("noisy") else "") for r in recs)))
        out.append("")
    out += ["### Per-round samples/s (rounds in time order; * = noisy run)", "",
            "The spread shows the machine's two speed modes; compare peers within a round.", ""]
    out += per_round_lines
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.stdout.write(main(sys.argv[1:]))
