"""The house's import graph: no circles among the shipped modules (core/, exporters/, addon/,
cli.py, bakejob.py) and the bake farm (farm/, not shipped: cli imports it, it imports bakejob),
counting imports made inside functions too, so no function-local import can be hiding one; the run-time imports nothing of the compiler; the ground-truth oracles (core/truth/) are
imported by no shipped module, since the extension's zip leaves them out."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("core", "exporters", "addon")


def _modules() -> dict[str, Path]:
    mods = {}
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        if rel.parts[0] not in SHIPPED + ("farm",) and str(rel) not in ("cli.py", "bakejob.py", "__init__.py"):
            continue
        name = ".".join(("brushbake", *rel.with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = path
    return mods


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports anywhere in its file (relative imports resolved)."""
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            edges.setdefault(name, set()).update(t for t in targets if t in mods and t != name)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_circles_in_the_shipped_modules():
    assert _cycles(_edges(_modules())) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_run_time_imports_nothing_of_the_compiler_or_the_readers():
    edges = _edges(_modules())
    for name, targets in edges.items():
        if name.startswith("brushbake.core.runtime."):
            bad = [t for t in targets if t.startswith(("brushbake.core.compile", "brushbake.core.formats",
                                                        "brushbake.core.truth", "brushbake.addon"))]
            assert not bad, f"{name} imports {bad}"


def test_no_shipped_module_imports_the_truth_oracles():
    edges = _edges(_modules())
    for name, targets in edges.items():
        if not name.startswith("brushbake.core.truth"):
            bad = [t for t in targets if t.startswith("brushbake.core.truth")]
            assert not bad, f"{name} imports {bad}: core/truth/ is not in the extension zip"
