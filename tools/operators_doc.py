"""Write docs/operators.md: every registered operator, grouped by the module that defines it,
with its aliases and the namespaces MXNet code reaches it by (`mx.sym.X`, `mx.sym.contrib.X`,
`mx.sym.linalg.X`, `mx.sym.image.X`). tests/docs/test_operators_doc.py checks it is current.

    python tools/operators_doc.py
"""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from minimod.ops.registry import list_ops  # noqa: E402

OUT = os.path.join(ROOT, "docs", "operators.md")
NAMESPACES = (("_contrib_", "contrib."), ("_linalg_", "linalg."), ("_image_", "image."))


def spelled(name: str) -> str:
    """How MXNet code writes the operator: `mx.sym.contrib.ROIAlign` for `_contrib_ROIAlign`."""
    for prefix, namespace in NAMESPACES:
        if name.startswith(prefix):
            return namespace + name[len(prefix):]
    return name


def render() -> str:
    by_class: dict = {}
    for name, cls in list_ops().items():
        by_class.setdefault(cls, set()).add(name)
    families: dict = {}
    for cls, names in by_class.items():
        family = cls.__module__.replace("minimod.ops.", "").replace("minimod.", "")
        families.setdefault(family, []).append((cls.name, sorted(names - {cls.name})))
    lines = ["# Operators", "",
             "Every operator minimod registers (%d classes, %d names with the aliases), by the "
             "file that defines it under `minimod/ops/` (or the package that registers it). "
             "Each runs in a graph (`mx.sym.<name>`) and imperatively (`mx.nd.<name>`); the "
             "`_contrib_`, `_linalg_` and `_image_` ones are written `mx.sym.contrib.X`, "
             "`mx.sym.linalg.X`, `mx.sym.image.X` as in MXNet. Written by "
             "`python tools/operators_doc.py`." % (len(by_class), len(list_ops())), ""]
    for family in sorted(families):
        lines += ["## %s" % family, ""]
        for name, aliases in sorted(families[family], key=lambda x: x[0].lower()):
            also = " (also %s)" % ", ".join("`%s`" % spelled(a) for a in aliases) \
                if aliases else ""
            lines.append("- `%s`%s" % (spelled(name), also))
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    text = render()
    tmp = OUT + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, OUT)
    print("wrote %s" % OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
