"""The benchmark in one command: minimod vs MXNet 1.9.1 vs PyTorch on this machine's CPU, with
the hand-written NumPy steps of the same models as the floor of an engine over NumPy.

    python3 benchmarks/run.py                 # 5 interleaved rounds, then benchmarks/RESULTS.md
    python3 benchmarks/run.py --quick         # 1 short round: checks that everything runs

What it does, in order:
1. Finds or makes the peers' interpreters. MXNet 1.9.1 needs numpy < 2, so it lives in its own
   venv (`--mxnet-python PATH`, else `benchmarks/.venvs/mxnet`, made on first use with
   `pip install mxnet==1.9.1 numpy==1.23.5`); PyTorch likewise (`--torch-python`, else
   `benchmarks/.venvs/torch` with `pip install torch==2.13.0`; pass `--torch-pip-args` such as
   `--index-url https://download.pytorch.org/whl/cpu` where the default index would pull a
   CUDA build). minimod runs in the interpreter running this script. A peer whose venv cannot
   be made is left out, and the table says so.
2. Runs `run_all.sh`: every workload under every peer (the hand-written NumPy peer,
   bench_numpy.py, runs the training workloads it has a step for). A workload's peers run as
   concurrent processes that take turns window by window (lockstep.py), so each round's ratios
   compare the same seconds of the machine; the peer order rotates between rounds, and each
   workload waits for a quiet machine first (see benchutil.py for the timing windows, the
   quiet filter and the baton).
3. Writes benchmarks/RESULTS.md: the machine, then `summarize.py`'s tables (samples/s as
   median [min-max] over rounds, ms/step, peak RSS, same-round ratios to MXNet, PyTorch and
   the hand-written NumPy step),
   then the profile (`profile_steps.py`: BLAS vs elementwise vs framework time per workload, and
   the hand-written NumPy step of the same model; `numpy_kernels.py`: what NumPy's own
   elementwise kernels and the update cost at these sizes), then the multi-process row when
   `bench_dist.py` and MPI are available. It prints the tables as it goes.

Same threads for every engine (BENCH_THREADS, default 2), float32, synthetic data from a fixed
seed, warm-up excluded. Never run it beside another heavy process: on 2 cores two BLAS
processes slow each other several-fold.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import benchutil  # noqa: E402  (threads and BLAS kernels for every process started below)

DEFAULT_WORKLOADS = ("mlp:128:module mlp:32:module mlp:128:fit lenet:64:module "
                     "lstm:32:module lstm_fused:32:module sdnet:128:module w2v_nce:256:module "
                     "lstm_nce:32:module mlp:128:infer lenet:64:infer")
PEER_PACKAGES = {
    "mxnet": (["mxnet==1.9.1", "numpy==1.23.5"], "import mxnet, numpy; print(mxnet.__version__)"),
    "torch": (["torch==2.13.0", "numpy"], "import torch; print(torch.__version__)"),
    # the `dist` extra's MPI (bench_dist.py puts this checkout first on sys.path)
    "dist": (["mpi4py>=3.1", "mpich>=4.1", "numpy"], "import mpi4py.MPI"),
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ensure_peer(name: str, given: str | None, pip_args: list) -> str | None:
    """The interpreter of peer `name`: the given one, or a venv under benchmarks/.venvs made
    on first use. None (with a message) when it cannot be had."""
    packages, probe = PEER_PACKAGES[name]
    python = Path(given) if given else HERE / ".venvs" / name / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", probe],
                                          capture_output=True).returncode == 0:
        return str(python)
    if given:
        log("%s: %s cannot import %s; leaving %s out" % (name, given, name, name))
        return None
    venv = python.parent.parent
    log("%s: making %s (pip install %s) ..." % (name, venv, " ".join(packages)))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages, *pip_args],
                       check=True)
        subprocess.run([str(python), "-c", probe], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as err:
        log("%s: could not set up its venv (%s); leaving %s out" % (name, err, name))
        return None
    return str(python)


def machine_description() -> list:
    """Lines describing the CPU, memory and software the run used."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
        mem = ", %.0f GiB RAM" % (kib / 2 ** 20)
    except (OSError, ValueError, IndexError):
        pass
    import numpy as np
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas_text = "%s %s" % (blas.get("name", "?"), blas.get("version", ""))
    except Exception:  # noqa: BLE001  (older NumPy: no dict mode)
        blas_text = "unknown BLAS"
    return [
        "- CPU: %s, %d logical cores%s; %s %s" % (cpu, os.cpu_count() or 0, mem,
                                                  platform.system(), platform.release()),
        "- threads per engine: %s (OMP/OpenBLAS/MKL; torch.set_num_threads)"
        % os.environ.get("BENCH_THREADS", "2"),
        "- minimod: Python %s, NumPy %s (%s)" % (platform.python_version(), np.__version__,
                                               blas_text),
        "- OpenBLAS kernels: OPENBLAS_CORETYPE=%s for every engine (BENCH_OPENBLAS_CORETYPE=%s; "
        "the environment had %s); each run's table is in its JSON line (`openblas_core`)"
        % (os.environ.get("OPENBLAS_CORETYPE", "unset"), benchutil.CORETYPE,
           benchutil.INHERITED_CORETYPE or "none"),
    ]


def peer_versions(raw: Path) -> list:
    seen = {}
    if raw.exists():
        for line in raw.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "error" not in rec and rec.get("lib") not in seen:
                seen[rec["lib"]] = "%s %s (numpy %s, OpenBLAS kernels %s)" % (
                    rec["lib"], rec.get("version", "?"), rec.get("numpy", "?"),
                    rec.get("openblas_core") or "none loaded")
    return ["- peers: " + "; ".join(seen[k] for k in sorted(seen))] if seen else []


def run_section(cmd: list, env: dict, what: str) -> str:
    log("# %s: %s" % (what, " ".join(cmd)))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        log(proc.stderr[-2000:])
        return "\n(%s failed with exit status %d; see above)\n" % (what, proc.returncode)
    return proc.stdout


def _has_mpi4py(python: str) -> bool:
    return subprocess.run([python, "-c", "import mpi4py.MPI"], capture_output=True).returncode == 0


def dist_section(args, env: dict) -> str:
    """The multi-process row: bench_dist.py's table, run under an interpreter with mpi4py."""
    candidates = [args.dist_python] if args.dist_python else [
        sys.executable, str(ROOT / ".venv" / "bin" / "python")]
    python = next((p for p in candidates if p and Path(p).exists() and _has_mpi4py(p)), None)
    if python is None and not args.dist_python:
        python = ensure_peer("dist", None, [])
    head = ["## Multi-process: dist_sync over MPI, MLP batch 128", ""]
    if python is None:
        return "\n".join(head + ["Not run: no interpreter with mpi4py (install the `dist` "
                                 "extra, or pass --dist-python)."]) + "\n"
    seconds = "2" if args.quick else "10"
    text = run_section([python, str(HERE / "bench_dist.py"), "--seconds", seconds], env,
                       "multi-process")
    table = [line for line in text.splitlines() if line.startswith("|")]
    return "\n".join(head + [
        "`benchmarks/bench_dist.py`: the same total batch of 128 per step on one process "
        "(1x2: one process, 2 BLAS threads; 1x1: one thread) and on two dist_sync workers "
        "(2x1: `python -m minimod.launch -n 2`, 64 rows each, one allreduce of the whole "
        "model's gradients per step); samples/s of whole batches, allreduce time per step "
        "inside training and alone.", ""] + (table or [text.strip()])) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="1 round of short runs (a smoke test; the figures mean little)")
    parser.add_argument("--workloads", default=os.environ.get("WORKLOADS", DEFAULT_WORKLOADS),
                        help="space-separated net:batch:mode (default: %(default)s)")
    parser.add_argument("--mxnet-python", help="an interpreter with mxnet 1.9.1 installed")
    parser.add_argument("--torch-python", help="an interpreter with torch installed")
    parser.add_argument("--torch-pip-args", default="",
                        help="extra pip arguments for the torch venv")
    parser.add_argument("--no-mxnet", action="store_true")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--raw", default=str(HERE / "results" / "raw.jsonl"),
                        help="the JSON lines of every run (replaced by this run)")
    parser.add_argument("--skip-profile", action="store_true")
    parser.add_argument("--skip-dist", action="store_true")
    parser.add_argument("--dist-python", help="an interpreter with mpi4py for bench_dist.py")
    args = parser.parse_args()

    env = dict(os.environ)
    env["MINIMOD_PY"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["WORKLOADS"] = args.workloads
    missing = []
    for name, flag, given, skip in (("mxnet", "MXNET_PY", args.mxnet_python, args.no_mxnet),
                                    ("torch", "TORCH_PY", args.torch_python, args.no_torch)):
        python = None if skip else ensure_peer(
            name, given, args.torch_pip_args.split() if name == "torch" else [])
        env[flag] = python or "/nonexistent/%s-python" % name
        if python is None:
            missing.append(name)
    rounds = args.rounds
    if args.quick:
        rounds = 1
        env.update(BENCH_WINDOW="0.15", BENCH_QUIET_WINDOWS="3", BENCH_MAX_S="1.5",
                   BENCH_WARMUP="0.3", WAIT_QUIET_MAX="3")
    raw = Path(args.raw)
    raw.parent.mkdir(parents=True, exist_ok=True)
    if raw.exists():
        raw.unlink()
    started = datetime.datetime.now(datetime.timezone.utc)
    subprocess.run(["bash", str(HERE / "run_all.sh"), str(rounds), str(raw)], env=env,
                   check=True)
    shown = raw.resolve()  # named relative to the checkout in RESULTS.md where it lies inside
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
    tables = run_section([sys.executable, str(HERE / "summarize.py"), str(shown)], env,
                         "summary")
    print(tables, flush=True)
    profile = ""
    if not args.skip_profile:
        profile = run_section([sys.executable, str(HERE / "profile_steps.py")]
                              + (["--quick"] if args.quick else []), env, "profile")
        profile += "\n" + run_section([sys.executable, str(HERE / "numpy_kernels.py")], env,
                                      "NumPy kernels")
        print(profile, flush=True)
    dist = ""
    if (HERE / "bench_dist.py").exists() and not args.skip_dist:
        dist = dist_section(args, env)
        print(dist, flush=True)
    lines = ["# Benchmark results: minimod vs MXNet 1.9.1 vs PyTorch (CPU)", "",
             "Written by `python3 benchmarks/run.py%s` on %s (%d round%s)."
             % (" --quick" if args.quick else "", started.strftime("%Y-%m-%d %H:%M UTC"),
                rounds, "" if rounds == 1 else "s"), ""]
    lines += machine_description() + peer_versions(raw)
    if missing:
        lines.append("- left out (no interpreter could be set up): %s" % ", ".join(missing))
    out = "\n".join(lines) + "\n\n" + tables.strip() + "\n"
    if profile:
        out += "\n" + profile.strip() + "\n"
    if dist:
        out += "\n" + dist.strip() + "\n"
    notes = HERE / "NOTES.md"
    if notes.exists():
        out += "\n" + notes.read_text().strip() + "\n"
    target = Path(args.out)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(out)
    os.replace(tmp, target)
    log("# wrote %s" % target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
