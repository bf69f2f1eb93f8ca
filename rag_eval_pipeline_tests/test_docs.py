"""The README and the documentation site (mkdocs.yml, docs/) stay one: every page is in the nav (a page
outside it is reachable only by search), every relative link of the README and the pages leads to a file
and, into a page, to one of its headings; the README stays a first page that keeps, for each thing the
team's rules say it must stay true about, a line whose names the linked page uses too; the CLI reference
names every command. `mkdocs build --strict` (make lint) checks the pages' links again, with the
docstring references of the API pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

from rag_eval_pipeline.cli.registry import COMMANDS
from rag_eval_pipeline_tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code, where links and headings are markdown."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """The ids MkDocs (the toc extension's slugify) and GitHub give the page's headings."""
    return {slugify(title, "-") for title in HEADING.findall(prose(page.read_text(encoding="utf-8")))}


def nav_pages(entries: list) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(nav_pages(value) if isinstance(value, list) else [value])
    return pages


def broken_links(source: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(source.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not a file of the checkout
            continue
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no such heading in {resolved.name}")
    return broken


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = nav_pages(config["nav"])
    assert len(in_nav) == len(set(in_nav)), "a page is twice in the nav"
    assert sorted(in_nav) == sorted(str(page.relative_to(DOCS)) for page in PAGES)


@pytest.mark.parametrize("source", [README, *PAGES], ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_resolves(source: Path) -> None:
    assert broken_links(source) == []


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text("# Page\n\n## The UI\n", encoding="utf-8")
    source = tmp_path / "README.md"
    source.write_text(
        "[ok](page.md#the-ui) [gone](gone.md) [bad](page.md#no-such) `[code](gone.md)`\n"
        "```\n[fenced](gone.md)\n```\n[web](https://example.com)\n",
        encoding="utf-8",
    )
    assert broken_links(source) == ["gone.md: no such file", "page.md#no-such: no such heading in page.md"]


# What the team's rules say the README must stay true about: the words its line must say, and the page
# its link must lead to.
README_PROMISES = {
    "the two set-up commands": (["make demo", "make test"], "getting-started.md"),
    "how to open the UI": (["make ui", "rag-eval ui", "http://127.0.0.1:3000"], "running.md"),
    "how to add a chunk config and backfill it": (
        ["data/chunk_configs.yaml", "rag-eval run --chunk-configs"],
        "chunk-configs.md",
    ),
    "how to query the Parquet history": (["rag-eval query", "retrieval_metrics"], "history.md"),
    "how to switch on OpenAI": (["OPENAI_API_KEY", "RAG_EVAL_EMBEDDER=openai"], "services.md"),
    "how to switch on LangSmith": (["LANGSMITH_API_KEY"], "services.md"),
    "how to switch on a Qdrant server": (["QDRANT_URL", "QDRANT_API_KEY"], "services.md"),
    "how to switch on Postgres": (
        ["dagster.postgres.yaml", "$DAGSTER_HOME/dagster.yaml", "DAGSTER_PG_"],
        "services.md",
    ),
}


@pytest.mark.parametrize("promise", sorted(README_PROMISES))
def test_the_readme_keeps_a_line_and_a_link_for(promise: str) -> None:
    """Each promise has a README paragraph or list item saying its words and linking to its page, and
    the page says the same words: a renamed variable or command fails here, not in a user's shell."""
    words, page = README_PROMISES[promise]
    # paragraphs and list items; a code block goes with the paragraph after it
    blocks = re.split(r"(?<!```)\n\s*\n|\n(?=- )", README.read_text(encoding="utf-8"))
    holding = [block for block in blocks if all(word in block for word in words)]
    assert holding, f"no README paragraph or list item says all of {words}"
    assert any(f"docs/{page}" in block for block in holding), f"the README's line does not link to {page}"
    text = (DOCS / page).read_text(encoding="utf-8")
    assert [word for word in words if word not in text] == [], f"docs/{page} no longer says it"


def test_the_readme_stays_a_first_page() -> None:
    """Short, with its picture of the leaderboard small enough to load at once and its lines readable."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120
    assert [line for line in prose(text).splitlines() if len(line) > 110] == []
    picture = DOCS / "leaderboard.png"
    assert "(docs/leaderboard.png)" in text
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert picture.stat().st_size < 200_000


def test_the_cli_reference_names_every_command() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert [name for name in COMMANDS if f"`rag-eval {name}" not in text] == []
