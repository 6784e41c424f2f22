"""The guided tour (docs/tour/) runs, and its README quotes exactly what each script prints.

Each `docs/tour/NN_*.py` runs in a fresh subprocess from the repository root (as a reader
would run it); its stdout must equal the block after `<!-- output: NN_*.py -->` in
docs/tour/README.md. After changing a script or the code it shows, paste the new output.
"""
import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOUR = os.path.join(ROOT, "docs", "tour")
SCRIPTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TOUR, "[0-9][0-9]_*.py")))
NEEDS = {"02_plot_graph.py": "graphviz"}


def _quoted_outputs() -> dict:
    with open(os.path.join(TOUR, "README.md")) as f:
        text = f.read()
    blocks = re.findall(r"<!-- output: (\S+) -->\n```text\n(.*?)```", text, flags=re.S)
    return dict(blocks)


def test_every_script_is_quoted_in_the_readme():
    assert len(SCRIPTS) >= 4
    assert sorted(_quoted_outputs()) == SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_tour_script_prints_what_the_readme_shows(script, tmp_path):
    package = NEEDS.get(script)
    if package and importlib.util.find_spec(package) is None:
        pytest.skip("%s needs the %s package (the viz extra)" % (script, package))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("MINIMOD_NAN_GUARD", None)
    run = subprocess.run([sys.executable, os.path.join(TOUR, script), str(tmp_path)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == _quoted_outputs()[script]
    if script == "02_plot_graph.py":
        assert os.path.exists(tmp_path / "lenet.gv")  # the source, written in every case
