"""Size and structure figures of the minimod package, for keeping it readable.

    python tools/code_metrics.py            # the summary
    python tools/code_metrics.py --detail   # every long file, long function and cycle

- files over 400 and over 600 lines;
- functions (and methods) over 40 lines, docstrings included;
- import cycles between minimod's packages (a package is a directory, or a top-level module),
  counting every import, module-level or inside a function: a late import that hides a cycle
  is still a cycle.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "minimod")


def python_files(root: str = ROOT) -> list:
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.join(base, f) for f in sorted(files) if f.endswith(".py")]
    return out


def module_name(path: str, root: str = ROOT) -> str:
    rel = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def package_of(module: str) -> str:
    """minimod.ops.nn -> minimod.ops; minimod.metric -> minimod.metric."""
    parts = module.split(".")
    return ".".join(parts[:2])


def imports_of(path: str, module: str) -> set:
    """The minimod modules `path` imports, anywhere in the file."""
    tree = ast.parse(open(path).read(), path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("minimod")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("minimod"):
                found.add(target)
                found |= {target + "." + a.name for a in node.names}
    return found


def long_functions(path: str, limit: int = 40) -> list:
    tree = ast.parse(open(path).read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                out.append((node.name, node.lineno, length))
    return out


def package_cycles(files: list) -> list:
    """Strongly connected groups of packages (size > 1) in the package import graph."""
    modules = {module_name(p) for p in files}
    edges: dict = {}
    for path in files:
        mod = module_name(path)
        src = package_of(mod)
        for target in imports_of(path, mod):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            dst = package_of(target) if target else ""
            if dst and dst != src and dst != "minimod":
                edges.setdefault(src, set()).add(dst)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detail", action="store_true")
    args = parser.parse_args(argv)
    files = python_files()
    sizes = {p: sum(1 for _ in open(p)) for p in files}
    over400 = sorted((n, p) for p, n in sizes.items() if n > 400)
    over600 = [(n, p) for n, p in over400 if n > 600]
    funcs = [(p, f) for p in files for f in long_functions(p)]
    cycles = package_cycles(files)
    print("files: %d, lines: %d" % (len(files), sum(sizes.values())))
    print("files over 400 lines: %d, over 600: %d" % (len(over400), len(over600)))
    print("functions over 40 lines: %d" % len(funcs))
    print("package-level import cycles: %d" % len(cycles))
    if args.detail:
        for n, p in reversed(over400):
            print("  %5d  %s" % (n, os.path.relpath(p, os.path.dirname(ROOT))))
        for p, (name, line, length) in sorted(funcs, key=lambda x: -x[1][2]):
            print("  %4d lines  %s:%d %s" % (length, os.path.relpath(p, os.path.dirname(ROOT)),
                                             line, name))
        for group in cycles:
            print("  cycle: " + " <-> ".join(group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
