"""``make mutate``'s configuration stays in step with the tree: every module's files and
tests exist, every test selection names a test, the equivalent mutants name mutated files,
and the runner's helpers (operator exclusions, annotation spans) do what the run relies on."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load_runner():
    """tools/mutate.py (a script of the repository, not of the package), loaded by path."""
    spec = importlib.util.spec_from_file_location("mlc_mutate_runner", ROOT / "tools" / "mutate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


mutate = _load_runner()


def test_modules_name_existing_files_and_tests():
    mods, defaults = mutate.load_modules()
    assert {"database", "fold_constant", "loop_deps", "emit", "rules", "fuse", "frontend", "vm_checks"} <= set(mods)
    for mod in mods.values():
        assert mod.paths and mod.tests and mod.timeout > 0, mod.name
        for path in mod.paths:
            assert (ROOT / path).is_file(), f"{mod.name}: {path} is gone"
        for test in mod.tests:
            file, _, name = test.partition("::")
            assert (ROOT / file).is_file(), f"{mod.name}: {file} is gone"
            if name:
                assert re.search(rf"^def {re.escape(name)}\(", (ROOT / file).read_text(), re.M), test


def test_equivalent_mutants_name_mutated_files():
    mods, _ = mutate.load_modules()
    mutated = {p for m in mods.values() for p in m.paths}
    entries = mutate.tomllib.loads((ROOT / "tools" / "mutate_equivalent.toml").read_text())["equivalent"]
    assert entries
    for e in entries:
        assert e["path"] in mutated and e["operator"].startswith("core/") and e["why"], e
        assert int(e["col"]) >= 0 and e["line"].strip()


def test_operator_exclusions_keep_the_listed_replacements():
    _, defaults = mutate.load_modules()
    pats = [re.compile(p) for p in mutate.exclusions(defaults)]

    def excluded(name: str) -> bool:
        return any(p.match(name) for p in pats)

    assert not excluded("core/ReplaceBinaryOperator_Add_Sub") and excluded("core/ReplaceBinaryOperator_Add_Mul")
    assert not excluded("core/ReplaceComparisonOperator_Lt_LtE") and excluded("core/ReplaceComparisonOperator_Lt_Is")
    assert not excluded("core/ReplaceUnaryOperator_Delete_Not") and excluded("core/ReplaceUnaryOperator_UAdd_Not")
    assert not excluded("core/NumberReplacer") and not excluded("core/AddNot")


def test_annotation_spans():
    src = "from __future__ import annotations\n\ndef f(a: int | None, *, b: str = 'x') -> list[int] | None:\n" \
          "    c: dict[str, int] = {}\n    return [a | 1]\n"
    spans = mutate._annotation_spans(src)
    inside = lambda row, col: any(s <= (row, col) < e for s, e in spans)  # noqa: E731
    assert inside(3, 13) and inside(3, 49) and inside(4, 12)   # the '|' of the annotations, dict[...]
    assert not inside(5, 14)                                   # 'a | 1' is code
    assert mutate._annotation_spans(src.split("\n", 1)[1]) == []  # evaluated annotations: mutated
