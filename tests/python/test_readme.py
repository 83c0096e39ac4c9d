"""The README's (and docs/') Python code blocks run as written, top to bottom, in one
namespace, with no prelude (mktestdocs: each block is executed after the ones above it)."""

from pathlib import Path

import pytest
from mktestdocs import check_md_file, grab_code_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_readme_has_the_blocks_it_promises():
    blocks = grab_code_blocks((ROOT / "README.md").read_text(), lang="python")
    assert len(blocks) >= 5  # quick start, schedule, graph, graph optimization, tuning


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_doc_code_blocks_run_top_to_bottom(doc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tuning block writes its database and plot here
    check_md_file(doc, memory=True)
