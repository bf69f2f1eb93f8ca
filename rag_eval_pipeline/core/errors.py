"""Errors that tell a user which file, line, field or key is wrong and what to do about it."""

from __future__ import annotations

import os

# Where `rag-eval` looks for the workspace (core/workspace.locate_workspace implements it), said by
# `rag-eval --help` and, with how to make one, by every error about a missing project file or folder.
PRECEDENCE = (
    "the workspace is, first that applies: --workspace DIR; $RAG_EVAL_PROJECT_DIR; the current directory "
    "or the nearest folder above it holding rag-eval.yaml; else the bundled demo"
)
INIT_HINT = "create a workspace for your documents with `rag-eval init DIR --corpus DOCS`"
WORKSPACE_HINT = f"{INIT_HINT}, or choose another; {PRECEDENCE}"


class InputError(ValueError):
    """Bad user input (corpus, dataset, config). The message names the place and the remedy."""


class CorpusError(InputError):
    pass


class ConfigError(InputError):
    pass


class DatasetError(InputError):
    pass


class UnknownNameError(ConfigError):
    """A name (profile, chunk config, run) that is not there: HTTP 404 in the API, exit 2 in the CLI."""


class NameTakenError(ConfigError):
    """A new name (a created or cloned profile) that is taken already: HTTP 409 in the API, exit 2 in the
    CLI."""


class StorageError(OSError):
    """A file, folder or database could not be written (full disk, read-only file system, no permission).
    Not bad input: the message names the path, the operation and the OS error, and what to do."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        operation: str,
        reason: str,
        remedy: str = "",
        errno: int | None = None,
    ) -> None:
        self.path = str(path)
        self.operation = operation
        self.reason = reason
        self.remedy = remedy
        super().__init__(f"cannot {operation} {self.path}: {reason}" + (f": {remedy}" if remedy else ""))
        self.errno = errno  # str() stays the message above: OSError formats errno only with a strerror

    def __reduce__(self) -> tuple[type[StorageError], tuple[str, str, str, str, int | None]]:
        return type(self), (self.path, self.operation, self.reason, self.remedy, self.errno)

    def or_else(self, alternative: str) -> StorageError:
        """The same error with a further remedy the caller knows of (e.g. another folder)."""
        remedy = f"{self.remedy} or {alternative}" if self.remedy else alternative
        return StorageError(self.path, self.operation, self.reason, remedy, self.errno)
