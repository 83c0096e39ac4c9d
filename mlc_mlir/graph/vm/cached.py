"""``mlc.graph.build`` through the compile cache (:mod:`mlc_mlir.compiler.compile_cache`).

A hit loads the entry's library (:mod:`mlc_mlir.compiler.aot`) and gives an
:class:`Executable` that behaves as a fresh build's: the same graph functions and checks,
``ex.source`` (the module passed in), ``ex.optimized`` (read from the entry's bytecode when
first asked for), ``get_source``, ``export_library``. A miss compiles into the entry's
staging directory and stores ``ex.optimized`` next to the library.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlir import ir

from ...compiler.aot import LIBRARY, AotModule
from ...compiler.compile_cache import BuildKey, Entry, file_digest, target_fingerprint, through_cache
from ...compiler.cpu_backend import host_target
from ...context import mlc_context
from ...errors import BuildError
from ...ir import Module
from ...runtime.loader import LibraryModule, load_module
from ...runtime.vm import CallbackErrors, Executable

__all__ = ["cached_build", "CachedExecutable", "OPTIMIZED"]

#: the entry's file holding ``ex.optimized`` (MLIR bytecode: the weights as raw bytes)
OPTIMIZED = "optimized.mlirbc"


class CachedExecutable(Executable):
    """An :class:`Executable` from the compile cache; ``optimized`` is read when first asked for."""

    _optimized: Any = None
    _optimized_file: tuple[Path, str] | None = None

    @property  # type: ignore[override]
    def optimized(self) -> Any:
        """The module after graph optimization and legalization (before lowering)."""
        if self._optimized is None and self._optimized_file is not None:
            path, digest = self._optimized_file
            if file_digest(path) != digest:
                raise BuildError(f"the compile cache entry {path.parent} is damaged ({path.name} differs from its "
                                 "sha256): delete it, or build with cache=False")
            with mlc_context():
                self._optimized = Module(ir.Module.parse(path.read_bytes()))
            self._optimized_file = None
        return self._optimized

    @optimized.setter
    def optimized(self, value: Any) -> None:
        self._optimized = value


def _load(entry: Entry, mod: Module) -> Executable:
    loaded = load_module(str(entry.file(LIBRARY)))
    if not isinstance(loaded, Executable) or not isinstance(loaded.rt, LibraryModule):
        raise BuildError(f"{entry.path}: the cached library holds no graph")
    ex = CachedExecutable(AotModule.adopt(loaded.rt), loaded.signatures, [], CallbackErrors(), mod, None,
                          loaded.extent_checks, loaded.memory_plan)
    record = entry.record["files"].get(OPTIMIZED)
    if record is not None:
        ex._optimized_file = (entry.file(OPTIMIZED), record["sha256"])
    return ex


def _save(ex: Executable, staging: Path) -> None:
    if ex.optimized is not None:
        with open(staging / OPTIMIZED, "wb") as f:
            ex.optimized.mlir_module.operation.write_bytecode(f)


def cached_build(mod: Module, target: str, root: Path, *, opt_level: int, llvm_opt_level: int,
                 build: Callable[[str | None], Executable]) -> Executable:
    """``build(library_dir)``'s executable, or the cached one of the same module and options."""
    options = {"target": target_fingerprint(host_target(target)), "opt_level": opt_level,
               "llvm_opt_level": llvm_opt_level, "fastmath": "contract"}
    return through_cache(root, BuildKey(mod, kind="graph", options=options), load=lambda entry: _load(entry, mod),
                         build=build, runtime=lambda ex: ex.rt, save=_save, info={"kind": "graph", "options": options})
