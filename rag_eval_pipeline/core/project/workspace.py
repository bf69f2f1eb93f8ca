"""A workspace: the folder a team evaluates its own documents in, and where `rag-eval` finds it.

    <workspace>/rag-eval.yaml      which documents (their folder stays where it is) and which files of it
    <workspace>/data/*.yaml        the settings files, with commented defaults
    <workspace>/dagster.yaml       its own Dagster instance under .dagster/, telemetry off
    <workspace>/data/warehouse/    what the runs write (tables, history, reports)

The bundled demo (this checkout) is simply the default workspace. Where the workspace is, the first
that applies (``errors.PRECEDENCE``, shown by `rag-eval --help` and with every error about a missing
file):
``--workspace DIR``; ``$RAG_EVAL_PROJECT_DIR``; the current directory, or the nearest folder above it,
holding rag-eval.yaml; the bundled demo.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..corpus.corpus import Corpus, glob_problem
from ..errors import ConfigError, CorpusError, InputError
from ..settings.settings_file import load_settings

WORKSPACE_FILE = "rag-eval.yaml"
PROJECT_DIR_ENV = "RAG_EVAL_PROJECT_DIR"

# The checkout this package runs from: the bundled demo workspace when it holds data/.
_CHECKOUT = Path(__file__).resolve().parents[3]
_TEMPLATES = Path(__file__).parent / "workspace_templates"
# Template file -> where init writes it in the workspace.
_SETTINGS_TEMPLATES = {
    "chunk_configs.yaml": "data/chunk_configs.yaml",
    "retrieval_profiles.yaml": "data/retrieval_profiles.yaml",
    "generation.yaml": "data/generation.yaml",
    "answer_evaluation.yaml": "data/answer_evaluation.yaml",
    "monitoring.yaml": "data/monitoring.yaml",
    "search.yaml": "data/search.yaml",
    "dagster.yaml": "dagster.yaml",
    "gitignore": ".gitignore",
}


@dataclass(frozen=True)
class WorkspaceSettings:
    """rag-eval.yaml: the documents of the workspace."""

    corpus: str = "data/corpus"  # a folder; relative to the workspace
    glob: str | None = None  # None: every file of a known format

    def __post_init__(self) -> None:
        problem = glob_problem(self.glob) if self.glob else None
        if problem:
            raise ConfigError(
                f"glob {self.glob!r} {problem}: the glob is relative to the corpus folder (corpus: "
                f"{self.corpus!r}) and selects files under it, e.g. '**/*.md' or 'guides/*.md'; to read "
                "documents elsewhere, set corpus to their folder"
            )


def check_workspace_outside_corpus(workspace: Path, corpus_folder: Path, chosen_by: str) -> None:
    """A workspace inside its own corpus folder would read its reports, tables and settings as documents,
    and each run would change the corpus the next one evaluates (every score moves): refused, by `init`
    and whenever the corpus folder is read (``chosen_by`` names what chose it: rag-eval.yaml's
    ``corpus``, the resource's ``corpus_dir``). A hidden folder there (``docs/.rag-eval``) is fine: the
    corpus never looks into hidden folders."""
    root, corpus = Path(os.path.realpath(workspace)), Path(os.path.realpath(corpus_folder))
    if root != corpus and corpus not in root.parents:
        return
    if any(part.startswith(".") for part in root.relative_to(corpus).parts):
        return
    raise CorpusError(
        f"{chosen_by}: the corpus folder {corpus} holds the workspace {root}, so the runs would read the "
        "workspace's own reports and tables as documents and change the corpus they evaluate; put the "
        f"workspace outside {corpus} (or in a hidden folder in it, such as {corpus / '.rag-eval'}), or "
        "choose a corpus folder that does not hold it"
    )


def load_workspace_settings(root: Path) -> WorkspaceSettings:
    """The workspace's rag-eval.yaml; the defaults (data/corpus, every known format) without one."""
    return load_settings(root / WORKSPACE_FILE, WorkspaceSettings)


@dataclass(frozen=True)
class WorkspaceLocation:
    root: Path
    source: str  # which rule of errors.PRECEDENCE chose it

    def describe(self) -> str:
        return f"workspace {self.root} (from {self.source})"


def locate_workspace(
    flag: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] = os.environ,
    cwd: Path | None = None,
) -> WorkspaceLocation:
    """The workspace by ``errors.PRECEDENCE``; the folder is not checked here (the caller says what is missing)."""
    if flag:
        return WorkspaceLocation(Path(flag).resolve(), "--workspace")
    configured = environ.get(PROJECT_DIR_ENV)
    if configured:
        return WorkspaceLocation(Path(configured).resolve(), f"${PROJECT_DIR_ENV}")
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / WORKSPACE_FILE).is_file():
            source = (
                "the current directory" if folder == here else f"{WORKSPACE_FILE} above the current directory"
            )
            return WorkspaceLocation(folder, source)
    if (_CHECKOUT / "data").is_dir():
        return WorkspaceLocation(_CHECKOUT, "the bundled demo")
    return WorkspaceLocation(here, "the current directory")


@dataclass(frozen=True)
class CreatedWorkspace:
    root: Path
    corpus: Corpus
    written: tuple[Path, ...]


def init_workspace(target: Path, corpus_folder: Path, glob: str | None = None) -> CreatedWorkspace:
    """A workspace at ``target`` over the documents in ``corpus_folder`` (loaded first, so a folder
    without a readable document fails before anything is written). Refuses to overwrite a file."""
    target, corpus_folder = target.resolve(), corpus_folder.resolve()
    check_workspace_outside_corpus(target, corpus_folder, f"rag-eval init {target} --corpus {corpus_folder}")
    corpus = Corpus.from_folder(corpus_folder, glob)
    planned = {target / WORKSPACE_FILE: _workspace_file(target, corpus_folder, glob)}
    for template, location in _SETTINGS_TEMPLATES.items():
        planned[target / location] = (_TEMPLATES / template).read_text(encoding="utf-8")
    present = [str(p) for p in planned if p.exists()]
    if present:
        raise InputError(
            f"{target} already holds {', '.join(present)}: init never overwrites a file; choose an empty "
            "or new folder"
        )
    for path, text in planned.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return CreatedWorkspace(target, corpus, tuple(planned))


def _workspace_file(target: Path, corpus_folder: Path, glob: str | None) -> str:
    """rag-eval.yaml naming the corpus relative to the workspace (the two move together), or absolute
    when no relative path leads there (another drive)."""
    try:
        location = os.path.relpath(corpus_folder, target)
    except ValueError:
        location = str(corpus_folder)
    template = (_TEMPLATES / WORKSPACE_FILE).read_text(encoding="utf-8")
    return template.format(corpus=_yaml_string(location), glob=_yaml_string(glob) if glob else "null")


def _yaml_string(value: str) -> str:
    """A double-quoted YAML scalar: any path or glob reads back as written."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
