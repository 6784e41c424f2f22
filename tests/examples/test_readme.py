"""The Python snippet in README.md runs as printed."""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_readme_snippet_runs(tmp_path):
    with open(os.path.join(ROOT, "README.md")) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    (tmp_path / "snippet.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, check=True,
                   timeout=300)
    assert (tmp_path / "mlp-symbol.json").exists()
    assert (tmp_path / "mlp-0005.params").exists() and (tmp_path / "mlp-0005.states").exists()
