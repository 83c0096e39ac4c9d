"""The installed package: dialect files as package data, the OpenMP lookup, metadata, logging.

The wheel itself, installed into a clean venv and used from outside the checkout, is
checked by tests/package/check_wheel.py (``make package-check``, part of ``make test``).
"""

import ast
import importlib.metadata
import importlib.resources
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mlc_mlir
from mlc_mlir.toolchain import openmp_lib
from mlc_mlir.context import dialect_files, dialects_dir
from mlc_mlir.errors import LoweringError

ROOT = Path(__file__).resolve().parents[2]

GRAPH = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.graph} {
  %0 = "mlc.dataflow"() ({
    %1 = "mlc.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "mlc.output"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
    omp.terminator
  }) {resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def run_python(code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None):
    """``code`` in a fresh interpreter (an abort there cannot kill the test run)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MLC_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=300)


def test_dialect_files_are_package_resources():
    resources = importlib.resources.files("mlc_mlir.dialects")
    names = sorted(p.name for p in resources.iterdir() if p.name.endswith(".irdl.mlir"))
    assert "mlc.irdl.mlir" in names
    assert [p.name for p in dialect_files()] == names
    assert dialects_dir() == Path(str(resources))
    # the repository's top-level dialects/ is what the package carries
    assert (ROOT / "dialects" / "mlc.irdl.mlir").read_text() == (resources / "mlc.irdl.mlir").read_text()


def test_graph_dialect_loads_from_the_package():
    mod = mlc_mlir.Module.parse(GRAPH)
    assert '"mlc.relu"' in str(mod)


def test_missing_dialects_raise_install_error_at_context_creation(tmp_path):
    # MLC_DIALECTS_DIR is set after `import mlc_mlir`: it is read when the context is created.
    code = f"""
import os
import mlc_mlir
from mlc_mlir.errors import InstallError
os.environ["MLC_DIALECTS_DIR"] = {str(tmp_path)!r}
try:
    mlc_mlir.Module.parse({GRAPH!r})
except InstallError as exc:
    print("InstallError:", exc)
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert f"InstallError: dialect definition mlc.irdl.mlir not found in {tmp_path} (from MLC_DIALECTS_DIR)" \
        in proc.stdout


def test_dialects_dir_override_is_used(tmp_path):
    shutil.copy(ROOT / "dialects" / "mlc.irdl.mlir", tmp_path)
    code = f"""
import mlc_mlir
from mlc_mlir.context import dialect_files
print([str(p) for p in dialect_files()])
print(mlc_mlir.Module.parse({GRAPH!r})["main"] is not None)
"""
    proc = run_python(code, env={"MLC_DIALECTS_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [f"['{tmp_path / 'mlc.irdl.mlir'}']", "True"]


def test_openmp_lib_comes_from_the_intel_openmp_distribution():
    dist = importlib.metadata.distribution("intel-openmp")
    (lib,) = [f for f in dist.files if f.name == "libiomp5.so"]
    assert Path(openmp_lib()) == Path(dist.locate_file(lib)).resolve()


def test_openmp_lib_found_in_a_user_install_layout(tmp_path):
    # pip install --user puts intel-openmp's library in ~/.local/lib, its metadata in
    # ~/.local/lib/pythonX.Y/site-packages: a layout that sys.prefix knows nothing about.
    site = tmp_path / "lib" / "python3" / "site-packages"
    info = site / "intel_openmp-9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: intel-openmp\nVersion: 9.9\n")
    (info / "RECORD").write_text("../../libiomp5.so,,\nintel_openmp-9.9.dist-info/METADATA,,\n")
    shutil.copy(openmp_lib(), tmp_path / "lib" / "libiomp5.so")
    code = "from mlc_mlir.toolchain import openmp_lib; print(openmp_lib())"
    proc = run_python(code, env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str((tmp_path / "lib" / "libiomp5.so").resolve())


def test_openmp_lib_env_override(tmp_path, monkeypatch):
    lib = tmp_path / "libomp.so"
    shutil.copy(openmp_lib(), lib)
    monkeypatch.setenv("MLC_OPENMP_LIB", str(lib))
    assert openmp_lib() == str(lib)
    monkeypatch.setenv("MLC_OPENMP_LIB", str(tmp_path / "nope.so"))
    with pytest.raises(LoweringError, match=r"MLC_OPENMP_LIB=.*nope\.so.* is not a file"):
        openmp_lib()


def test_metadata_license_and_typing():
    meta = importlib.metadata.metadata("mlc-mlir")
    assert meta["Version"] == mlc_mlir.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert "Typing :: Typed" in meta.get_all("Classifier")
    assert meta.get_all("Project-URL")
    assert importlib.resources.files("mlc_mlir").joinpath("py.typed").is_file()
    assert "Apache License" in (ROOT / "LICENSE").read_text()


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(extra: str | None, dist: str = "mlc-mlir") -> set[str]:
    """Distributions ``dist`` requires (``extra``: None for the base, "*" for every extra too).

    A declared metapackage (an installed distribution with no module of its own, such as
    cuda-python) stands for what it requires; other requirements' dependencies do not count.
    """
    def names(reqs: list[str], keep) -> set[str]:
        found = set()
        for req in reqs:
            in_extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", req)
            if keep(in_extra.group(1) if in_extra else None):
                found.add(_normalize(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0]))
        return found

    declared = names(importlib.metadata.requires(dist) or [], lambda e: e == extra or extra == "*")
    providers = {_normalize(d) for ds in importlib.metadata.packages_distributions().values() for d in ds}
    todo = list(declared)
    while todo:
        name = todo.pop()
        if name in providers:
            continue
        try:
            parts = names(importlib.metadata.requires(name) or [], lambda e: e is None) - declared
        except importlib.metadata.PackageNotFoundError:
            continue
        declared |= parts
        todo.extend(parts)
    return declared


def _distributions(module: str) -> set[str]:
    dists = importlib.metadata.packages_distributions().get(module, [module])
    return {_normalize(d) for d in dists}


def test_import_mlc_mlir_needs_only_declared_dependencies():
    code = "import sys, mlc_mlir; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    third_party = {m for m in proc.stdout.split() if m not in sys.stdlib_module_names and m != "mlc_mlir"
                   and not m.startswith("_")}
    base = _requirement_names(None)
    undeclared = {m: _distributions(m) for m in third_party if not _distributions(m) & base}
    assert not undeclared, f"`import mlc_mlir` imports modules of undeclared distributions: {undeclared}"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_imported_distribution_is_declared():
    """Imports anywhere in the package, examples and benchmarks: a dependency or an extra."""
    local = {p.stem for d in ("examples", "benchmarks") for p in (ROOT / d).glob("*.py")}
    declared = _requirement_names("*")
    undeclared = {}
    for folder in ("mlc_mlir", "examples", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for module in _imports(path) - local - set(sys.stdlib_module_names) - {"mlc_mlir"}:
                if not _distributions(module) & declared:
                    undeclared.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not undeclared, f"imports of undeclared distributions (add them to pyproject.toml): {undeclared}"


def test_package_logger_is_silent_by_default_and_mlc_log_enables_it():
    import logging

    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("mlc_mlir").handlers)
    code = "import mlc_mlir; mlc_mlir.Module.parse('func.func @f() { return }')"
    quiet = run_python(code)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = run_python(code, env={"MLC_LOG": "debug"})
    assert loud.returncode == 0, loud.stderr
    assert "mlc_mlir.context: DEBUG: MLIR context created; IRDL dialects loaded from" in loud.stderr
    bad = run_python("import mlc_mlir", env={"MLC_LOG": "loud"})
    assert bad.returncode == 0 and "MLC_LOG='loud' is not a log level" in bad.stderr  # a warning only


def _is_sys_stderr(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "stderr" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def _stderr_writes(path: Path) -> list[int]:
    """Lines of ``print(..., file=sys.stderr)`` and ``sys.stderr.write(...)`` calls in ``path``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            if any(k.arg == "file" and _is_sys_stderr(k.value) for k in node.keywords):
                lines.append(node.lineno)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "write" and _is_sys_stderr(node.func.value):
            lines.append(node.lineno)
    return lines


def test_library_code_does_not_print_to_stderr():
    """Diagnostics go through the mlc_mlir logger; only the CLIs and requested IR dumps write stderr."""
    allowed = {"log.py", "doctor.py", "__main__.py"}
    offenders = {str(p.relative_to(ROOT)): _stderr_writes(p) for p in (ROOT / "mlc_mlir").rglob("*.py")
                 if p.name not in allowed and "tools" not in p.parts}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"print to stderr instead of logging (file: lines): {offenders}"
