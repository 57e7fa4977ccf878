"""Every exception class the project defines descends from the one tree (`expaudit.errors`).

The test imports every module of the five packages and collects the classes of
`Exception` defined in each; a module that cannot be imported because an optional
dependency (the simulator, the policies) is missing is read instead, and a class
there that derives only from built-in exceptions
fails too. A short allow-list names each exception outside the tree and why.
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

PACKAGES = ("expaudit", "leaderboard", "benchmark_data", "runner", "service")
ROOT = Path(__file__).resolve().parent.parent

OUTSIDE_THE_TREE = {
    "runner.executor.UnsupportedMechanismError":
        "the executor's bytes are hashed into stored cells' code versions: it is not edited",
    "runner.robomimic_compat.TorchvisionUnavailableError":
        "the file's bytes are hashed into stored cells' code versions: it is not edited",
    "runner.sandbox.nsinit.SetupError":
        "nsinit runs as `python -I -S nsinit.py` inside the sandbox, standard library only",
}
"""Exceptions that stay outside the tree, each with the reason."""

OPTIONAL_DEPENDENCIES = ("robosuite", "mujoco", "torch", "torchvision", "robomimic", "h5py",
                         "docker", "gunicorn")
"""Third-party packages a module may need that an install without extras lacks."""

BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if inspect.isclass(value) and issubclass(value, BaseException)}
TREE_NAMES = set(errors.__all__)


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
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


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
                 "service.errors.ServiceError", "service.storage.StoreError",
                 "runner.sandbox.base.SandboxError"):
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
