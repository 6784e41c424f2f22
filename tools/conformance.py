"""Run MXNet 1.9.1's own unit tests (the conformance kit in ../shared/mxnet-tests) on this
checkout and write docs/conformance.md.

    python tools/conformance.py                      # every file of the kit
    python tools/conformance.py test_symbol.py       # some files (the report covers those)
    python tools/conformance.py --context gpu        # test_operator.py on gpu(0)
    python tools/conformance.py --shards 4 ...       # each file as 4 pytest processes

The kit's tests need NumPy 1 (they use names NumPy 1.24 removed, such as `np.int`) and
nose, so they run in a venv of their own, `.venv-kit/` (made on first use with the pinned
versions below; `--python` names another interpreter). minimod is imported from this checkout
(the kit's shim maps `import mxnet` to `minimod`, nothing else).

The report (docs/conformance.md) has, per file, how many of the in-scope tests that pass on
MXNet 1.9.1 pass on minimod, and every in-scope test that does not, with its reason: the
reason written beside it in tests/conformance/known_failures.txt, or the first line of its
error when it is not listed there. The exit status is 1 when an in-scope test that MXNet
passes fails and is not in the known-failures list (a regression), 0 otherwise.

`--context gpu` runs the files (by default test_operator.py) as MXNet's own GPU suite ran
them: with `set_default_context(mx.gpu(0))` before the tests, so every array and bind they
make without naming a context is on the GPU. It writes docs/conformance-gpu.md, with its own
known-failures list. Where the kit's interpreter has no usable CuPy GPU (the kit needs
NumPy 1, CuPy 14 needs NumPy 2), gpu(0) is the NumPy stand-in for CuPy (tests/fake_cupy.py),
and the report says so: that checks the device code paths, not CuPy itself. Where it has
CuPy and so NumPy 2 (a GPU machine's image), the sitecustomize puts NumPy 1's builtin-type
aliases back (`np.int`, ...) so the kit's files import, and the report says so too.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_KIT = os.path.join(os.path.dirname(ROOT), "shared", "mxnet-tests")
KNOWN = os.path.join(ROOT, "tests", "conformance", "known_failures.txt")
REPORT = os.path.join(ROOT, "docs", "conformance.md")
KNOWN_GPU = os.path.join(ROOT, "tests", "conformance", "known_failures_gpu.txt")
REPORT_GPU = os.path.join(ROOT, "docs", "conformance-gpu.md")

#: imported at the start of every kit interpreter when --context gpu (put on its path as
#: sitecustomize.py): gpu(0) becomes the default context, on a real GPU or on the stand-in
GPU_SITECUSTOMIZE = '''
import os, sys
if os.environ.get("MINIMOD_KIT_CONTEXT") == "gpu":
    why = ""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            why = "CuPy sees no GPU"
    except Exception as err:
        why = "CuPy does not load in the kit's interpreter (%s: %s)" % (type(err).__name__, err)
    if why:
        from tests import fake_cupy
        fake_cupy.install()
    import numpy
    aliases = ""
    if int(numpy.__version__.split(".")[0]) >= 2:
        # a real GPU's CuPy needs NumPy 2, which dropped the builtin-type aliases the kit's
        # files use (np.int, np.float, ...): put them back so those files import and run
        for name, kind in (("int", int), ("float", float), ("bool", bool), ("object", object),
                           ("complex", complex), ("str", str), ("long", int)):
            if name not in vars(numpy):
                setattr(numpy, name, kind)
        aliases = ("; NumPy %s with NumPy 1's np.int/np.float/... aliases put back, where "
                   "MXNet's baseline ran NumPy 1.23.5" % numpy.__version__)
    import minimod
    from minimod import test_utils
    test_utils.set_default_context(minimod.gpu(0))
    where = ("the NumPy stand-in for CuPy (tests/fake_cupy.py), because " + why if why
             else "a real GPU: " + minimod.backend.cupy_status()) + aliases
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "context.txt"), "w") as f:
            f.write(where)
'''


#: a pytest plugin (`-p minimod_kit_shard`) for --shards: with MINIMOD_KIT_SHARD="i/N" a
#: pytest process keeps the tests whose id hashes to i of N. A hash, not a position, so that
#: run_file.py's restarts (which deselect the tests already run) keep each shard's tests.
SHARD_PLUGIN = '''
import os
import zlib


def pytest_collection_modifyitems(config, items):
    spec = os.environ.get("MINIMOD_KIT_SHARD")
    if not spec:
        return
    i, n = (int(v) for v in spec.split("/"))
    mine = [item for item in items if zlib.crc32(item.nodeid.encode()) % n == i]
    others = [item for item in items if zlib.crc32(item.nodeid.encode()) % n != i]
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = mine
'''


def kit_site(tmp: str) -> str:
    """A directory for the kit's MINIMOD_SRC under --context gpu or --shards: this checkout's
    `minimod` and `tests` (the stand-in) linked in, GPU_SITECUSTOMIZE as sitecustomize.py
    (which acts under --context gpu only) and the shard plugin."""
    for name in ("minimod", "tests"):
        os.symlink(os.path.join(ROOT, name), os.path.join(tmp, name))
    with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
        f.write(GPU_SITECUSTOMIZE)
    with open(os.path.join(tmp, "minimod_kit_shard.py"), "w") as f:
        f.write(SHARD_PLUGIN)
    return tmp


def run_sharded(python: str, kit: str, name: str, out: str, env: dict, shards: int) -> None:
    """One kit file as `shards` run_file.py processes side by side (each with its own
    results folder under `out`), for a machine with cores to spare."""
    procs = []
    for i in range(shards):
        procs.append(subprocess.Popen(
            [python, os.path.join(kit, "run_file.py"), "minimod", name,
             os.path.join(out, "shard%d" % i), "--", "-p", "minimod_kit_shard"],
            env=dict(env, MINIMOD_KIT_SHARD="%d/%d" % (i, shards))))
    for proc in procs:
        proc.wait()
VENV = os.path.join(ROOT, ".venv-kit")
#: what the kit's tests need: MXNet 1.9.1's baseline was taken with NumPy 1.23.5
KIT_REQUIREMENTS = ["numpy==1.23.5", "scipy<1.12", "nose", "graphviz", "pytest<9",
                    "pytest-timeout"]


def kit_python(venv: str = VENV) -> str:
    """The kit venv's interpreter, made (and filled from the package index) on first use."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        print("conformance: making %s (%s)" % (venv, ", ".join(KIT_REQUIREMENTS)), flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q"] + KIT_REQUIREMENTS, check=True)
    return python


def read_known(path: str) -> dict:
    """nodeid -> reason, from lines `nodeid  # reason` ('#' lines are comments)."""
    known = {}
    if not os.path.exists(path):
        return known
    for line in open(path):
        nodeid, _, reason = line.partition("#")
        if nodeid.strip():
            known[nodeid.strip()] = reason.strip()
    return known


def read_baseline(kit: str) -> list:
    """The in-scope tests that pass on MXNet 1.9.1, in the kit's order."""
    wanted = []
    for line in open(os.path.join(kit, "baseline.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        nodeid, outcome, scope = line.rstrip("\n").split("\t")[:3]
        if outcome == "passed" and scope == "in":
            wanted.append(nodeid)
    return wanted


def read_beyond(kit: str) -> list:
    """(nodeid, scope, why) of the tests outside the scope ('out' or 'mixed') that pass on
    MXNet 1.9.1: not counted, but reported when minimod passes them too."""
    beyond = []
    for line in open(os.path.join(kit, "baseline.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        nodeid, outcome, scope, why = (line.rstrip("\n").split("\t") + [""])[:4]
        if outcome == "passed" and scope != "in":
            beyond.append((nodeid, scope, why))
    return beyond


def read_results(out_dir: str) -> dict:
    """nodeid -> (outcome, first line of its message) from run_file.py's TSV files."""
    results = {}
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".tsv"):
            for line in open(os.path.join(out_dir, name)):
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2:
                    message = parts[3] if len(parts) > 3 else ""
                    results[parts[0]] = (parts[1], message.splitlines()[0] if message else "")
    return results


def write_report(path: str, files: list, wanted: list, results: dict, known: dict,
                 where: str = "", beyond: tuple = ()) -> list:
    """Write the markdown report; returns the failing tests that are not known. `where`, for
    a --context gpu run, says what gpu(0) was; `beyond` (read_beyond) adds the out-of-scope
    tests minimod passes as well."""
    per_file = collections.OrderedDict((f, [0, 0]) for f in files)
    failing = []
    for nodeid in wanted:
        test_file = nodeid.split("::")[0]
        if test_file not in per_file:
            continue
        per_file[test_file][1] += 1
        outcome, message = results.get(nodeid, ("not run", ""))
        if outcome == "passed":
            per_file[test_file][0] += 1
        else:
            failing.append((nodeid, outcome, message))
    passed = sum(v[0] for v in per_file.values())
    total = sum(v[1] for v in per_file.values())
    title = "# MXNet 1.9.1's own unit tests on minimod" + (", on gpu(0)" if where else "")
    lines = [title, "",
             "Written by `python tools/conformance.py` on %s. The kit (`../shared/mxnet-tests`) "
             "runs MXNet 1.9.1's unit-test files unchanged, with `import mxnet` mapped to "
             "`minimod` and nothing else; a test counts when MXNet 1.9.1 passes it and it is in "
             "scope (the symbolic stack, not Gluon, autograd, `mx.np`, sparse storage, "
             "quantization, the profiler or engine internals)."
             % datetime.date.today().isoformat(), "",
             # the kit's score.py prints the same "conformance: N of M" line
             ("**on gpu(0): %d of %d** in-scope tests that pass on MXNet 1.9.1 (on its CPU) "
              "pass on minimod with `set_default_context(mx.gpu(0))`; gpu(0) was %s."
              % (passed, total, where)) if where else
             "**conformance: %d of %d** in-scope tests that pass on MXNet 1.9.1 pass on "
             "minimod." % (passed, total),
             "", "| file | pass on minimod | in scope, pass on MXNet |", "|---|---|---|"]
    lines += ["| %s | %d | %d |" % (f, p, t) for f, (p, t) in per_file.items()]
    lines += ["", "## The in-scope tests that do not pass, and why", ""]
    if not failing:
        lines.append("None.")
    for nodeid, outcome, message in failing:
        reason = known.get(nodeid) or "(not in the known-failures list) %s: %s" % (outcome,
                                                                                  message)
        lines.append("- `%s`: %s" % (nodeid, reason))
    lines += _beyond_lines(files, beyond, results)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return [n for n, _, _ in failing if n not in known]


def _beyond_lines(files: list, beyond, results: dict) -> list:
    """The report's section on the tests outside the scope that minimod passes too."""
    ran = [(n, scope, why) for n, scope, why in beyond if n.split("::")[0] in files]
    if not ran:
        return []
    passing = [(n, scope, why) for n, scope, why in ran
               if results.get(n, ("",))[0] == "passed"]
    lines = ["", "## Beyond the scope", "",
             "%d of the %d tests outside the scope (or only partly in it) that pass on MXNet "
             "1.9.1 pass on minimod as well; they are not counted above:" % (len(passing),
                                                                           len(ran)), ""]
    lines += ["- `%s` (%s: %s)" % (n, scope, why) for n, scope, why in passing]
    failing = [(n, scope, why) for n, scope, why in ran if (n, scope, why) not in passing]
    if failing:
        lines += ["", "The %d that do not, with what stopped them:" % len(failing), ""]
        for n, scope, why in failing:
            outcome, message = results.get(n, ("not run", ""))
            message = re.sub(r" at 0x[0-9a-f]+", "", message)  # no addresses in the report
            lines.append("- `%s` (%s: %s): %s%s" % (n, scope, why, outcome,
                                                     ": " + message if message else ""))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="kit files (default: all)")
    parser.add_argument("--kit", default=os.environ.get("MXNET_TESTS", DEFAULT_KIT))
    parser.add_argument("--python", help="interpreter with the kit's requirements "
                                         "(default: .venv-kit, made on first use)")
    parser.add_argument("--known")
    parser.add_argument("--report")
    parser.add_argument("--context", choices=("cpu", "gpu"), default="cpu",
                        help="gpu: set_default_context(mx.gpu(0)) first (see the docstring)")
    parser.add_argument("--shards", type=int, default=1,
                        help="run each file as N pytest processes side by side")
    args = parser.parse_args(argv)
    gpu = args.context == "gpu"
    args.known = args.known or (KNOWN_GPU if gpu else KNOWN)
    args.report = args.report or (REPORT_GPU if gpu else REPORT)
    if not os.path.isdir(args.kit):
        print("conformance: no kit at %s; nothing to run" % args.kit)
        return 0
    unit = os.path.join(args.kit, "tests", "python", "unittest")
    files = args.files or (["test_operator.py"] if gpu else sorted(
        f for f in os.listdir(unit) if f.startswith("test_") and f.endswith(".py")))
    python = args.python or kit_python()
    # the kit's files run from a temporary directory: a relative path or a bare name would not
    # resolve there
    python = os.path.abspath(python) if os.sep in python else shutil.which(python) or python
    env = dict(os.environ, MINIMOD_PY=python, MINIMOD_SRC=ROOT)
    where = ""
    with tempfile.TemporaryDirectory(prefix="conformance_") as out, \
            tempfile.TemporaryDirectory(prefix="conformance_site_") as site:
        env["OUT"] = out
        if gpu or args.shards > 1:
            env["MINIMOD_SRC"] = kit_site(site)
        if gpu:
            env["MINIMOD_KIT_CONTEXT"] = "gpu"
        for i, name in enumerate(files, 1):
            print("conformance: [%d/%d] %s" % (i, len(files), name), flush=True)
            if args.shards > 1:
                run_sharded(python, args.kit, name, out, env, args.shards)
            else:
                subprocess.run([python, os.path.join(args.kit, "run_file.py"), "minimod", name,
                                out], env=env, check=False)
        results = {}
        for folder in [out] + [os.path.join(out, "shard%d" % i) for i in range(args.shards)]:
            if os.path.isdir(os.path.join(folder, "minimod")):
                for nodeid, result in read_results(os.path.join(folder, "minimod")).items():
                    if result[0] != "not_run" or nodeid not in results:
                        results[nodeid] = result
        if gpu:
            marker = os.path.join(out, "context.txt")
            where = open(marker).read() if os.path.exists(marker) else "unknown (no test ran)"
    known = read_known(args.known)
    new = write_report(args.report, files, read_baseline(args.kit), results, known, where,
                       read_beyond(args.kit))
    print(open(args.report).read())
    fixed = [n for n in known if results.get(n, ("",))[0] == "passed"]
    if fixed:
        print("conformance: listed as known failures but passing now (take them off the "
              "list): " + ", ".join(fixed))
    if new:
        print("conformance: %d in-scope test(s) fail that are not in %s:"
              % (len(new), os.path.relpath(args.known, ROOT)))
        for nodeid in new:
            print("  " + nodeid)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
