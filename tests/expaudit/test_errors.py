"""Every exception class the project defines descends from the one tree (`expaudit.errors`).

The test imports every module of the five packages and collects the classes of
`Exception` defined in each; a module that cannot be imported because an optional
dependency (the simulator, the policies) is missing is read instead, and a class
there that derives only from built-in exceptions
fails too. A short allow-list names each exception outside the tree and why.

Every module is also parsed: a `raise` of a built-in exception class (`ValueError(...)`,
`KeyError`) fails, save `NotImplementedError` and the files allow-listed below, each with
its reason; the errors raised on purpose are the tree's (subclassing the built-in callers
catch where they do).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from expaudit import errors
from expaudit.errors import ExpauditError
from tests.support.paths import REPO_ROOT

PACKAGES = ("expaudit", "leaderboard", "benchmark_data", "simulator", "sandbox", "service")
ROOT = REPO_ROOT

OUTSIDE_THE_TREE = {
    "sandbox.nsinit.SetupError":
        "nsinit runs as `python -I -S nsinit.py` inside the sandbox, standard library only",
}
"""Exceptions that stay outside the tree, each with the reason."""

OPTIONAL_DEPENDENCIES = ("robosuite", "mujoco", "torch", "torchvision", "robomimic", "h5py",
                         "docker", "gunicorn")
"""Third-party packages a module may need that an install without extras lacks."""

BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if inspect.isclass(value) and issubclass(value, BaseException)}
TREE_NAMES = set(errors.__all__)

BUILTIN_ERRORS = {name for name in BUILTIN_EXCEPTIONS
                  if issubclass(getattr(builtins, name), Exception)} - {
    "NotImplementedError", "StopIteration", "StopAsyncIteration"}
"""Built-in errors a module must not raise itself: control flow (SystemExit, StopIteration)
and abstract methods (NotImplementedError) are not errors of the tree's kind."""


WHOLE_FILES_ALLOWED = {
    "sandbox/nsinit.py": "runs as `python -I -S nsinit.py` inside the sandbox: standard "
                                "library only, the tree cannot be imported there",
}
"""Files that may raise any built-in error, each with the reason."""

SELECTOR_IMAGE_REASON = ("copied alone into the embedding selectors' images "
                         "(examples/selectors/*/Dockerfile): the tree cannot be imported there")
GETATTR_REASON = ("the module `__getattr__` of PEP 562 reports a missing attribute with "
                  "AttributeError, as Python does (a bug, never a user's input)")
COUNTED_RAISES_ALLOWED = {
    "leaderboard/rules/embeddings/base.py": (1, SELECTOR_IMAGE_REASON),
    "leaderboard/rules/embeddings/registry.py": (1, SELECTOR_IMAGE_REASON),
    "leaderboard/rules/embeddings/scoring.py": (4, SELECTOR_IMAGE_REASON),
    "leaderboard/rules/embeddings/torch_encoders.py": (3, SELECTOR_IMAGE_REASON),
    "expaudit/lazy.py": (1, GETATTR_REASON),
    "simulator/robomimic_compat.py": (1, "the placeholder torchvision module's `__getattr__` "
                                         "reports a dunder it lacks with AttributeError, as "
                                         "Python's import machinery expects"),
}
"""Files that may raise built-in errors, at most so many times, each with the reason: a new
raise there fails too."""


def _module_names() -> list[str]:
    names = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names.append(package_name)
        names.extend(info.name for info in pkgutil.walk_packages(package.__path__,
                                                                 f"{package_name}."))
    return sorted(name for name in names if not name.endswith(".__main__"))


def _source(module_name: str) -> Path:
    path = ROOT.joinpath(*module_name.split("."))
    package = path / "__init__.py"  # a data folder may share a module's name (benchmark_data/frozen)
    return package if package.is_file() else path.with_suffix(".py")


def _read_classes(module_name: str) -> dict[str, str]:
    """Classes of an unimportable module that derive from a built-in exception without a
    base named from the tree: {qualified name: the bases as written}."""
    tree = ast.parse(_source(module_name).read_text())
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
        if set(bases) & BUILTIN_EXCEPTIONS and not set(bases) - BUILTIN_EXCEPTIONS:
            found[f"{module_name}.{node.name}"] = ", ".join(bases)
    return found


def _exception_classes() -> tuple[dict[str, type], dict[str, str]]:
    """(imported classes by qualified name, classes read from unimportable modules)."""
    imported: dict[str, type] = {}
    read: dict[str, str] = {}
    for module_name in _module_names():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in OPTIONAL_DEPENDENCIES:
                raise
            read.update(_read_classes(module_name))
            continue
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, Exception)
                    and value.__module__ == module_name):
                imported[f"{module_name}.{value.__qualname__}"] = value
    return imported, read


@pytest.fixture(scope="module")
def exception_classes():
    return _exception_classes()


def test_the_walk_finds_the_project_errors(exception_classes):
    """The walk sees the errors it must see (so an empty walk cannot pass)."""
    imported, _ = exception_classes
    for name in ("expaudit.errors.UserError", "leaderboard.errors.InputError",
                 "service.errors.ServiceError", "service.store.storage.StoreError",
                 "sandbox.base.SandboxError"):
        assert name in imported, name


def test_every_exception_descends_from_the_tree(exception_classes):
    imported, read = exception_classes
    outside = sorted(name for name, cls in imported.items() if not issubclass(cls, ExpauditError))
    outside += sorted(f"{name} ({bases})" for name, bases in read.items())
    unexplained = [name for name in outside
                   if name.split(" ")[0] not in OUTSIDE_THE_TREE]
    assert unexplained == [], ("exceptions outside expaudit.errors' tree: subclass "
                               f"UserError's kinds or InternalError: {unexplained}")


def test_the_allow_list_names_only_exceptions_outside_the_tree(exception_classes):
    """An allowed class that joined the tree (or is gone) leaves the list, so it only shrinks."""
    imported, read = exception_classes
    for name in sorted(OUTSIDE_THE_TREE):
        assert name in imported or name in read, f"{name}: no such exception"
        assert name in read or not issubclass(imported[name], ExpauditError), \
            f"{name} is in the tree now: remove it from the list"


def test_no_exception_is_both_the_users_and_the_machinerys(exception_classes):
    """A class belongs to one branch: the command's one line or a retry, never both."""
    imported, _ = exception_classes
    both = sorted(name for name, cls in imported.items()
                  if issubclass(cls, errors.UserError) and issubclass(cls, errors.InternalError))
    assert both == []


def test_the_tree_is_the_documented_one():
    assert TREE_NAMES == {"ExpauditError", "UserError", "InvalidInput", "UnknownName",
                          "DataNotFound", "Unreachable", "InternalError"}
    for name in ("InvalidInput", "UnknownName", "DataNotFound", "Unreachable"):
        assert getattr(errors, name).__bases__ == (errors.UserError,), name
    assert errors.InternalError.__bases__ == (ExpauditError,)


def _builtin_raises(path: Path) -> list[str]:
    """`line: name` of each `raise` in a file that constructs a built-in error itself (called
    or bare, by name or as `builtins.X`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Attribute) and getattr(raised.value, "id", None) == "builtins":
            name = raised.attr
        else:
            name = getattr(raised, "id", None)
        if name in BUILTIN_ERRORS:
            found.append((node.lineno, name))
    return [f"{line}: {name}" for line, name in sorted(found)]


@pytest.fixture(scope="module")
def builtin_raises() -> dict[str, list[str]]:
    """Repository-relative path -> the built-in raises it holds, for every source file of the
    five packages that has any (found on disk, so a package that fails to import is read too)."""
    found = {}
    for package_name in PACKAGES:
        for path in sorted((ROOT / package_name).rglob("*.py")):
            raises = _builtin_raises(path)
            if raises:
                found[path.relative_to(ROOT).as_posix()] = raises
    return found


def test_the_raise_check_sees_a_builtin_raise(tmp_path):
    """The parse finds a called, a bare and a qualified built-in error, and lets
    NotImplementedError, SystemExit and a tree class through (so an empty result cannot
    pass by accident)."""
    module = tmp_path / "module.py"
    module.write_text("import builtins\n\n\ndef f(x):\n    if x:\n        raise ValueError(f'x: {x}')\n"
                      "    raise KeyError from None\n\n\ndef g():\n"
                      "    raise NotImplementedError\n\n\ndef h():\n"
                      "    raise InvalidInput('field x')\n\n\ndef i():\n"
                      "    raise builtins.RuntimeError('no')\n\n\n"
                      "if __name__ == '__main__':\n    raise SystemExit(0)\n")
    assert _builtin_raises(module) == ["6: ValueError", "7: KeyError", "19: RuntimeError"]


def test_no_module_raises_a_builtin_exception(builtin_raises):
    """Errors raised on purpose are the tree's: an `InvalidInput`, `UnknownName`,
    `DataNotFound`, `Unreachable` or `InternalError` subclass, which also subclasses the
    built-in its callers catch (`class X(InvalidInput, ValueError)`)."""
    offending = {}
    for path, raises in sorted(builtin_raises.items()):
        if path in WHOLE_FILES_ALLOWED:
            continue
        ceiling = COUNTED_RAISES_ALLOWED.get(path, (0, ""))[0]
        if len(raises) > ceiling:
            offending[path] = raises
    assert offending == {}, ("raise a class of expaudit.errors' tree (subclass the built-in "
                             f"callers catch too), not a built-in exception: {offending}")


def test_the_raise_allow_lists_only_shrink(builtin_raises):
    """Every allowed file exists, and a counted file holds exactly its ceiling: a raise
    converted since lowers it (the standard-library-only file may hold any number)."""
    for path in (*WHOLE_FILES_ALLOWED, *COUNTED_RAISES_ALLOWED):
        assert (ROOT / path).is_file(), f"{path}: no such file"
    for path, (ceiling, _) in COUNTED_RAISES_ALLOWED.items():
        assert len(builtin_raises.get(path, [])) == ceiling, (
            f"{path} raises {len(builtin_raises.get(path, []))} built-in errors now: "
            f"set its ceiling to that")
