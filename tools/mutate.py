#!/usr/bin/env python3
"""Mutation testing of the core modules with cosmic-ray (``make mutate``).

For each module of ``tools/mutate.toml`` (all, or those named with ``--modules``), every
file it lists is mutated by cosmic-ray, one mutant at a time, and the module's own tests
run against each mutant in a fresh process (``pytest -x``): a mutant the tests fail on
(or that hangs past the module's timeout) is killed, one they pass on survived.

The mutants are applied in a scratch copy of the checkout per module
(``build/mutate/<module>/tree``, synced at each start, run with ``PYTHONPATH`` on it),
never in the working tree, so other work in the tree is not disturbed; each run first
checks that the module's tests pass there. Sessions are kept in ``build/mutate/<module>/``:
a rerun resumes where an interrupted one stopped (``--fresh`` starts over,
``--rerun-survivors`` runs the survivors against new tests). Survivors judged equivalent
(no test can tell them from the original) are listed in ``tools/mutate_equivalent.toml``;
the score is killed / (killed + survived - equivalent), mutants cosmic-ray could not apply
(incompetent) left out. The report (``build/mutate/report.md``) gives the counts per
module and the diff of every surviving mutant not listed as equivalent.

    python tools/mutate.py                       # every module (hours)
    python tools/mutate.py --modules database fold_constant
    python tools/mutate.py --list                # modules, files and tests
    python tools/mutate.py --report              # the report of the sessions so far
    python tools/mutate.py --modules database --rerun-survivors
    python tools/mutate.py --source head         # the last commit, not the working tree
"""

from __future__ import annotations

import argparse
import ast
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: cosmic-ray's own TOML reader
    import toml as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tools" / "mutate.toml"
EQUIVALENT = ROOT / "tools" / "mutate_equivalent.toml"


@dataclass
class Module:
    name: str
    paths: list[str]
    tests: list[str]
    timeout: float


@dataclass
class Counts:
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    equivalent: int = 0
    pending: int = 0
    survivors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.killed + self.survived + self.incompetent + self.pending

    @property
    def score(self) -> float | None:
        judged = self.killed + self.survived - self.equivalent
        return self.killed / judged if judged > 0 else None


def load_modules() -> tuple[dict[str, Module], dict]:
    cfg = tomllib.loads(CONFIG.read_text())
    defaults = cfg["defaults"]
    mods = {name: Module(name, m["paths"], m["tests"], float(m.get("timeout", defaults["timeout"])))
            for name, m in cfg["modules"].items()}
    return mods, defaults


def exclusions(defaults: dict) -> list[str]:
    """cosmic-ray operator-name regexes (``re.match``) for the replacements not kept."""
    out = []
    for kind, key in (("Binary", "keep-binary"), ("Comparison", "keep-comparison"), ("Unary", "keep-unary")):
        keep = "|".join(defaults[key])
        out.append(f"core/Replace{kind}Operator_(?!({keep})$)")
    return out


def scratch_tree(tree: Path, source: str = "worktree") -> Path:
    """``tree`` made a copy of the checkout's files: the working tree's (tracked and
    untracked, not ignored), or with ``source="head"`` the last commit's (other work in
    progress in a shared working tree left out). Files that differ are copied again (a run
    killed mid-mutant left its mutant there), files gone are removed; compiled bytecode for
    the tests' imports."""
    with tempfile.TemporaryDirectory() as tmp:
        if source == "head":
            archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            base = Path(tmp)
            wanted = {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}
        else:
            base = ROOT
            files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                                   capture_output=True).stdout.decode().split("\0")
            wanted = {rel for rel in files if rel and (ROOT / rel).is_file()}
        for rel in wanted:
            src, dst = base / rel, tree / rel
            if not dst.exists() or dst.read_bytes() != src.read_bytes():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    for old in [p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts]:
        if old.relative_to(tree).as_posix() not in wanted:
            old.unlink()  # (removed from the checkout since the last run)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "mlc_mlir", "tests/python"], cwd=tree, check=False)
    return tree


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["MLC_DIALECTS_DIR"] = str(tree / "dialects")
    env.pop("MLC_LOG", None)
    return env


def _session_paths(work: Path, mod: Module, path: str) -> tuple[Path, Path]:
    stem = Path(path).stem
    d = work / mod.name
    return d / f"{stem}.toml", d / f"{stem}.sqlite"


def write_config(cfg_path: Path, mod: Module, path: str, defaults: dict) -> None:
    tests = " ".join(shlex.quote(t) for t in mod.tests)
    cmd = f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:warnings {tests}"
    excl = ", ".join(f'"{e}"' for e in exclusions(defaults))
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(f"""[cosmic-ray]
module-path = "{path}"
timeout = {mod.timeout}
excluded-modules = []
test-command = "{cmd}"

[cosmic-ray.distributor]
name = "local"

[cosmic-ray.filters.operators-filter]
exclude-operators = [{excl}]
""")


def _cr(tool: str, *args: str, tree: Path, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / tool
    return subprocess.run([str(exe), *args], cwd=tree, env=_env(tree), check=check, text=True,
                          capture_output=True)


def run_module(mod: Module, work: Path, defaults: dict, fresh: bool, rerun: bool, source: str) -> None:
    tree = scratch_tree(work / mod.name / "tree", source)
    for path in mod.paths:
        cfg_path, session = _session_paths(work, mod, path)
        for pyc in (tree / path).parent.glob(f"__pycache__/{Path(path).stem}.*.pyc"):
            pyc.unlink()  # (cosmic-ray's test runs write none: each mutant is compiled from source)
        if fresh:
            session.unlink(missing_ok=True)
        elif rerun and session.exists():
            _forget_survivors(session)
        write_config(cfg_path, mod, path, defaults)
        if not session.exists():
            _cr("cosmic-ray", "init", str(cfg_path), str(session), tree=tree)
            _cr("cr-filter-operators", str(session), str(cfg_path), tree=tree)
            skip_annotations(session, tree / path)
        start = time.time()  # (every run: the tree was synced with the checkout)
        base = _cr("cosmic-ray", "baseline", str(cfg_path), tree=tree, check=False)
        if base.returncode != 0:
            raise SystemExit(f"mutate: {mod.name}: the tests fail on the unmutated tree "
                             f"({' '.join(mod.tests)}):\n{base.stdout[-3000:]}{base.stderr[-3000:]}")
        print(f"[{mod.name}] {path}: baseline passes in {time.time() - start:.0f} s", flush=True)
        counts = count(session, tree, path)
        print(f"[{mod.name}] {path}: {counts.pending} mutants to run ({counts.total} kept)", flush=True)
        start = time.time()
        _cr("cosmic-ray", "exec", str(cfg_path), str(session), tree=tree)
        c = count(session, tree, path)
        print(f"[{mod.name}] {path}: killed {c.killed}, survived {c.survived}, equivalent {c.equivalent}, "
              f"incompetent {c.incompetent} in {(time.time() - start) / 60:.1f} min", flush=True)


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) positions of the annotations of a module that imports
    ``from __future__ import annotations`` (never evaluated there); none otherwise."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
               any(a.name == "annotations" for a in n.names) for n in tree.body):
        return []
    nodes = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
            nodes.append(n.returns)
        elif isinstance(n, ast.arg) and n.annotation is not None:
            nodes.append(n.annotation)
        elif isinstance(n, ast.AnnAssign):
            nodes.append(n.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)) for a in nodes]


def skip_annotations(session: Path, source: Path) -> None:
    """Mark the mutants inside annotations skipped: with postponed evaluation they change
    nothing a program can observe (``str | None`` -> ``str & None``)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = _annotation_spans(source.read_text())
    if not spans:
        return
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            pos = tuple(m.start_pos)
            if any(a <= pos < b for a, b in spans):
                db.set_result(item.job_id, WorkResult(output="in an annotation (not evaluated)",
                                                      worker_outcome=WorkerOutcome.SKIPPED))


def _forget_survivors(session: Path) -> None:
    """Make the surviving mutants pending again (to run them against new tests)."""
    db = sqlite3.connect(session)
    with db:
        db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'")
    db.close()


def _equivalents() -> list[dict]:
    if not EQUIVALENT.exists():
        return []
    return tomllib.loads(EQUIVALENT.read_text()).get("equivalent", [])


def count(session: Path, tree: Path, path: str) -> Counts:
    """Counts of one session; survivors are matched against the equivalent list by file,
    operator, the line's text and the column (stable when other lines move), and where
    several mutants share those, by the mutated line's text (``to``) or the line before
    (``after``)."""
    c = Counts()
    source = (tree / path).read_text()
    lines, spans = source.splitlines(), _annotation_spans(source)
    equiv: dict[tuple, list[tuple[str, str | None]]] = {}
    for e in _equivalents():
        key = (e["path"], e["operator"], e["line"].strip(), int(e["col"]))
        equiv.setdefault(key, []).append((e.get("to", ""), e.get("after")))
    db = sqlite3.connect(session)
    rows = db.execute("""
        SELECT s.operator_name, s.start_pos_row, s.start_pos_col, r.test_outcome, r.worker_outcome, r.diff
        FROM mutation_specs s LEFT JOIN work_results r ON s.job_id = r.job_id""").fetchall()
    db.close()
    for op, row, col, test, worker, diff in rows:
        test, worker = (test or "").lower() or None, (worker or "").lower() or None  # (stored as enum names)
        if worker == "skipped" or any(a <= (row, col) < b for a, b in spans):
            continue
        if test is None and worker is None:
            c.pending += 1
        elif worker != "normal" or test == "incompetent":
            c.incompetent += 1
        elif test == "killed":
            c.killed += 1
        else:
            c.survived += 1
            text = lines[row - 1].strip() if 0 < row <= len(lines) else ""
            added = " ".join(x[1:].strip() for x in (diff or "").splitlines() if x.startswith("+")
                             and not x.startswith("+++"))
            before = lines[row - 2].strip() if row >= 2 else ""
            if any(to in added and after in (None, before) for to, after in equiv.get((path, op, text, col), [])):
                c.equivalent += 1
            else:
                c.survivors.append(f"{path}:{row}:{col} {op}\n    {text}\n{diff or ''}")
    return c


def report(mods: list[Module], work: Path) -> str:
    out = ["| module | mutants | killed | survived | equivalent | incompetent | score |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    details = []
    for mod in mods:
        tot = Counts()
        for path in mod.paths:
            _, session = _session_paths(work, mod, path)
            if not session.exists():
                continue
            tree = work / mod.name / "tree"
            c = count(session, tree if (tree / path).exists() else ROOT, path)
            for f in ("killed", "survived", "incompetent", "equivalent", "pending"):
                setattr(tot, f, getattr(tot, f) + getattr(c, f))
            tot.survivors += c.survivors
        if tot.total == 0:
            continue
        score = "-" if tot.score is None else f"{tot.score:.1%}"
        pend = f" ({tot.pending} pending)" if tot.pending else ""
        out.append(f"| {mod.name} | {tot.total}{pend} | {tot.killed} | {tot.survived} | {tot.equivalent} | "
                   f"{tot.incompetent} | {score} |")
        if tot.survivors:
            details.append(f"\n## {mod.name}: survivors not marked equivalent\n")
            details += [f"```\n{s}\n```" for s in tot.survivors]
    return "\n".join(out + details) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modules", nargs="*", help="modules of tools/mutate.toml (default: all)")
    ap.add_argument("--work", default=str(ROOT / "build" / "mutate"), help="scratch directory")
    ap.add_argument("--fresh", action="store_true", help="start the modules' sessions over")
    ap.add_argument("--rerun-survivors", action="store_true",
                    help="run the surviving mutants again (after adding tests)")
    ap.add_argument("--source", choices=["worktree", "head"], default="worktree",
                    help="mutate a copy of the working tree (default) or of the last commit")
    ap.add_argument("--list", action="store_true", help="list the modules and their tests")
    ap.add_argument("--report", action="store_true", help="only print the report of the sessions so far")
    args = ap.parse_args(argv)
    mods, defaults = load_modules()
    names = args.modules or list(mods)
    unknown = [n for n in names if n not in mods]
    if unknown:
        ap.error(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(mods)}")
    if args.list:
        for n in names:
            print(f"{n}: {' '.join(mods[n].paths)}\n    tests: {' '.join(mods[n].tests)}")
        return 0
    work = Path(args.work)
    if not args.report:
        for n in names:
            start = time.time()
            run_module(mods[n], work, defaults, args.fresh, args.rerun_survivors, args.source)
            print(f"[{n}] done in {(time.time() - start) / 60:.1f} min", flush=True)
    text = report([mods[n] for n in names], work)
    (work / "report.md").write_text(text)
    print(text.split("\n## ")[0])
    print(f"report with the survivors' diffs: {work / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
