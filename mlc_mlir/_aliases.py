"""Old import paths that keep working after a module moved (one table, one finder).

``import mlc_mlir.build.pipeline`` (the compiler package was ``mlc_mlir/build/`` before it
became :mod:`mlc_mlir.compiler`) gives the very module object of the new path, not a
second copy, so classes and module state stay unique. The finder is installed by
``mlc_mlir/__init__.py``; an old name is resolved on import by replacing the longest
matching prefix in :data:`MOVED`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import importlib.util
from types import ModuleType

# old module prefix -> new module prefix
MOVED: dict[str, str] = {
    "mlc_mlir.build": "mlc_mlir.compiler",
    # the course's `from tvm.ir.module import IRModule` (mlc_mlir.ir has a package path for it)
    "mlc_mlir.ir.module": "mlc_mlir.ir",
    # graph/ was 31 flat modules; now ir/, builder/, transform/, legalize/, vm/ (the packages
    # builder, transform, legalize and vm keep the old module names and their public names)
    **{f"mlc_mlir.graph.{m}": f"mlc_mlir.graph.ir.{m}" for m in (
        "expr", "op", "op_nn", "infer", "infer_nn", "function", "ast", "printer", "verify", "analysis",
        "expr_functor")},
    "mlc_mlir.graph.emit": "mlc_mlir.graph.builder.emit",
    "mlc_mlir.graph.te_bridge": "mlc_mlir.graph.builder.te_bridge",
    **{f"mlc_mlir.graph.{m}": f"mlc_mlir.graph.transform.{m}" for m in (
        "pass_infra", "passes", "fusion", "fuse_ops", "fuse_tir", "outline", "dce", "rewrite", "optimize",
        "dps_packed")},
    **{f"mlc_mlir.graph.{m}": f"mlc_mlir.graph.vm.{m}" for m in ("lower", "pipeline", "cuda")},
}


def new_name(fullname: str) -> str | None:
    """The current module name for an old one, or None when ``fullname`` did not move."""
    for old in sorted(MOVED, key=len, reverse=True):
        if fullname == old or fullname.startswith(old + "."):
            return MOVED[old] + fullname[len(old):]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module ran when it was imported under its own name; the import system set
        # its __spec__ to the alias's: give it back its own.
        module.__spec__ = self._spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves the old names of :data:`MOVED` to the modules at their new names."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None or new == fullname:
            return None
        if importlib.util.find_spec(new) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new), is_package=True)


def bind_loaded(package: str) -> None:
    """Register the old names under ``package`` whose new modules are already imported.

    An alias imported later through the finder would be set as an attribute of its parent
    package, replacing a public name of the same spelling (``mlc_mlir.graph.optimize`` the
    module over ``mlc.graph.optimize`` the function); a name already in ``sys.modules`` is not.
    """
    for old, new in MOVED.items():
        if old.startswith(package + ".") and new in sys.modules:
            sys.modules.setdefault(old, sys.modules[new])


def install() -> None:
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
