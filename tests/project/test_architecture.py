"""The import layers of docs/architecture.md hold: `lint-imports` keeps every contract in
pyproject.toml, every module has a layer, and the list of tolerated imports only shrinks."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT

IGNORED_IMPORTS_CEILING = 0
"""Entries in the contracts' `ignore_imports` today (each one a known layering debt with
its planned move in docs/architecture.md). Lower it when an entry goes; never raise it."""


def _config() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]


def _contract(config: dict, contract_id: str) -> dict:
    (contract,) = [c for c in config["contracts"] if c["id"] == contract_id]
    return contract


def _layer_items(config: dict) -> list[list[str]]:
    """The modules named in each layer of the `layers` contract, top layer first."""
    layers = _contract(config, "layers")["layers"]
    return [[name.strip() for name in layer.replace("|", ":").split(":")] for layer in layers]


def _covers(item: str, module: str) -> bool:
    return module == item or module.startswith(item + ".")


def _graph(config: dict) -> grimp.ImportGraph:
    return grimp.build_graph(*config["root_packages"], exclude_type_checking_imports=True,
                             cache_dir=None)


def test_lint_imports_keeps_every_contract():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"lint-imports broke a contract:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout


def test_every_module_has_exactly_one_layer():
    config = _config()
    items = [item for layer in _layer_items(config) for item in layer]
    graph = _graph(config)
    unplaced, doubly = [], []
    for module in sorted(graph.modules):
        holders = [item for item in items if _covers(item, module)]
        if len(holders) > 1:
            doubly.append(f"{module}: {holders}")
        elif not holders and not graph.find_children(module):
            unplaced.append(module)
    assert not unplaced, ("modules in no layer of the `layers` contract in pyproject.toml "
                          f"(add each to its layer, see docs/architecture.md): {unplaced}")
    assert not doubly, f"modules in more than one layer: {doubly}"


def test_unplaced_packages_import_only_their_own_modules_and_the_bottom_layer():
    """A package's `__init__` has no layer of its own; it may re-export its own modules and
    use the bottom layer (the leaf modules), so no import escapes the layers."""
    config = _config()
    layers = _layer_items(config)
    items = [item for layer in layers for item in layer]
    graph = _graph(config)
    escaping = []
    for package in sorted(graph.modules):
        if any(_covers(item, package) for item in items):
            continue
        for imported in graph.find_modules_directly_imported_by(package):
            if not (_covers(package, imported) or any(_covers(i, imported) for i in layers[-1])):
                escaping.append(f"{package} -> {imported}")
    assert not escaping, f"package __init__ imports outside its package and the leaf modules: {escaping}"


def _package_of(graph: grimp.ImportGraph, module: str) -> str:
    """The package a module belongs to: itself when it is a package, else its parent."""
    return module if graph.find_children(module) or _is_package_init(module) else module.rsplit(".", 1)[0]


def _is_package_init(module: str) -> bool:
    return (ROOT / Path(*module.split(".")) / "__init__.py").exists()


def test_no_package_imports_itself_through_others():
    """Packages, every folder with an `__init__.py` (subpackages included), import each other
    without a cycle: each module counts for the package it sits in directly."""
    graph = _graph(_config())
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        if module.endswith(".__main__"):
            continue  # a program run by `python -m`: nothing imports it, so it closes no cycle
        source = _package_of(graph, module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = _package_of(graph, imported)
            if target != source:
                edges.setdefault(source, set()).add(target)
    cycles, state = [], {}

    def visit(package: str, path: list[str]) -> None:
        state[package] = "open"
        for target in sorted(edges.get(package, ())):
            if state.get(target) == "open":
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[package] = "done"

    for package in sorted(edges):
        if package not in state:
            visit(package, [package])
    assert not cycles, "package cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_ignored_imports_only_shrink():
    config = _config()
    entries = [(c["id"], expr) for c in config["contracts"] for expr in c.get("ignore_imports", ())]
    assert len(entries) <= IGNORED_IMPORTS_CEILING, (
        f"{len(entries)} ignore_imports entries, ceiling {IGNORED_IMPORTS_CEILING}: a new import "
        f"breaks the layers; remove it instead of ignoring it: {entries}")
    assert len(entries) == IGNORED_IMPORTS_CEILING, (
        f"the layering debt shrank to {len(entries)} entries: lower IGNORED_IMPORTS_CEILING "
        f"in tests/project/test_architecture.py to {len(entries)}")


def test_every_ignored_import_says_why_it_is_debt():
    """Each ignore line has a `# Debt:` comment above it (in its group) naming the move that
    removes it, so the list reads as a plan, not as an exemption."""
    lines = (ROOT / "pyproject.toml").read_text().splitlines()
    start = lines.index("[tool.importlinter]")
    block = lines[start:]
    in_ignores, has_reason, missing = False, False, []
    for line in block:
        text = line.strip()
        if text.startswith("ignore_imports"):
            in_ignores, has_reason = True, False
        elif in_ignores and text == "]":
            in_ignores = False
        elif in_ignores and text.startswith("# Debt:"):
            has_reason = True
        elif in_ignores and text.startswith('"'):
            if not has_reason:
                missing.append(text)
            has_reason = False
    assert not missing, f"ignore_imports entries without a `# Debt:` comment: {missing}"


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other in a circle (Tarjan's strongly connected
    components of more than one module)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(start: str) -> None:  # iterative, so deep chains cannot hit the recursion limit
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_in_a_circle():
    """Imports under TYPE_CHECKING count here: a circle through one is a type in the wrong file.
    Deferred imports count too: a package face and its own modules must not go round."""
    graph = grimp.build_graph(*_config()["root_packages"], exclude_type_checking_imports=False,
                              cache_dir=None)
    assert _circles(graph) == []
