"""No import circles between the package's modules, and the layers import one way only.

The graph is read with ``ast`` from every module of ``rag_eval_pipeline``: every ``import`` and ``from ... import``
at any depth (an import inside a function still ties the two modules together), relative imports resolved, and
``from package import name`` read as the submodule when ``name`` is one. Imports under ``if TYPE_CHECKING:`` are
left out: they never run (annotations only), as import-linter's ``exclude_type_checking_imports`` leaves them; so
are those under ``if __name__ == "__main__":``, which run in the script ``__main__``, not in the module.
Layers: ``core`` imports nothing from ``defs``, ``cli``, ``labelling``, the servers or ``definitions``; ``defs``
nothing from ``cli`` or ``labelling``.
(``test_layout.py`` checks that ``core`` imports nothing from ``dagster``.)
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_eval_pipeline"


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.with_suffix("").relative_to(root.parent).parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


NOT_RUN_IN_THE_MODULE = ("TYPE_CHECKING", "typing.TYPE_CHECKING", "__name__ == '__main__'")


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) and
    ``if __name__ == "__main__":`` blocks."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in NOT_RUN_IN_THE_MODULE:
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (itself excluded)."""
    graph = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        found = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in files else module for a in node.names]
            for target in targets:
                while target and target not in files:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative), sorted."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def test_the_cycle_finder_finds_a_cycle_and_nothing_else():
    # a -> b -> c -> a is one circle; d -> a and c -> e hang off it
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "e"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_reads_relative_and_nested_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "x.py").write_text("from . import y\nfrom ..z import thing\n")
    (pkg / "sub" / "y.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.z\n"
                                      "def f():\n    import pkg.sub.x\n")
    (pkg / "z.py").write_text("thing = 1\n")
    graph = import_graph(module_files(pkg))
    assert graph["pkg.sub.x"] == {"pkg.sub.y", "pkg.z"}
    assert graph["pkg.sub.y"] == {"pkg.sub.x"}  # an import inside a function counts, a type-checking one not
    assert cycles(graph) == [["pkg.sub.x", "pkg.sub.y"]]


def test_no_import_circles_between_modules():
    graph = import_graph(module_files())
    assert "rag_eval_pipeline.defs.corpus" in graph["rag_eval_pipeline.defs.factory"]  # the graph is read
    assert cycles(graph) == []


def test_layers_import_one_way():
    graph = import_graph(module_files())
    outer = ("rag_eval_pipeline.defs", "rag_eval_pipeline.cli", "rag_eval_pipeline.labelling",
             "rag_eval_pipeline.serve", "rag_eval_pipeline.serve_reference", "rag_eval_pipeline.definitions")
    wrong = []
    for module, imported in sorted(graph.items()):
        for target in sorted(imported):
            if module.startswith("rag_eval_pipeline.core") and target.startswith(outer):
                wrong.append(f"{module} -> {target}")
            if module.startswith("rag_eval_pipeline.defs") and target.startswith(
                    ("rag_eval_pipeline.cli", "rag_eval_pipeline.labelling")):
                wrong.append(f"{module} -> {target}")
    assert wrong == []
