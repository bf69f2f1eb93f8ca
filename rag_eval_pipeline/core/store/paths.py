"""Paths built from names users choose (chunk configs, profiles, partition keys, dataset names).

Names are validated where they are read (core/settings/configs.py); this is the second line of defence at the
place a folder is made, renamed or deleted: a name is one path component, and the path stays under its
parent. ``data/bm25/.`` is ``data/bm25`` itself and ``data/bm25/..`` is ``data/``, so a name that slipped
through would otherwise replace or delete a folder that holds other configs' data.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, Self, TypeVar

from ..errors import ConfigError


class _JoinablePath(Protocol):
    """pathlib.Path, or a local UPath (the IO manager's paths), whose ``str`` is the local path."""

    def __truediv__(self, name: str) -> Self: ...


P = TypeVar("P", bound=_JoinablePath)


def child_path(parent: P, *names: str) -> P:
    """``parent / name / ...``, each name a single path component, the result (symlinks resolved)
    strictly under ``parent`` (resolved); otherwise a ConfigError naming the name and the folder.
    Returns the joined path as given (not resolved), of the parent's type (a UPath stays a UPath)."""
    path = parent
    for name in names:
        if not is_one_component(name):
            raise ConfigError(
                f"{name!r} cannot name a folder or file under {parent}: a name must be one path component "
                f"(not empty, not '.' or '..', no '/'); rename it (letters, digits, '_', '.', '-', "
                f"starting with a letter or digit)"
            )
        path = path / name
    base = Path(os.path.realpath(str(parent)))
    resolved = Path(os.path.realpath(str(path)))
    if base not in resolved.parents:
        raise ConfigError(
            f"{'/'.join(names)!r} under {parent} resolves to {resolved}, outside {base}: a symbolic link "
            f"leads out of the folder; remove the link or rename the entry"
        )
    return path


def is_one_component(name: object) -> bool:
    """Whether ``name`` names exactly one entry of a folder (not the folder itself or its parent)."""
    if not isinstance(name, str) or name in ("", ".", "..") or "\0" in name:
        return False
    return not any(sep and sep in name for sep in (os.sep, os.altsep, "/"))
