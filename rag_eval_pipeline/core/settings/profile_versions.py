"""Numbers the settings a retrieval profile has had: edit a profile and its version goes up by itself.

The ledger is a small JSON file kept next to the profiles (commit it with them, so a team shares the
numbers). A profile whose settings hash is new gets the next version; settings seen before get their
old number back, so reverting an edit does not invent a version. A ``version:`` written in the profile
file wins and is recorded as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..store.files import locked, write_text_atomically
from .configs import RetrievalProfile


class ProfileVersions:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def assign(self, profiles: Sequence[RetrievalProfile]) -> tuple[RetrievalProfile, ...]:
        """The profiles with ``version`` filled in; new settings are recorded in the ledger."""
        with locked(self.path):  # two runs loading configs at once number alike
            ledger = self._read()
            changed = False
            numbered = []
            for profile in profiles:
                entries: list[dict[str, Any]] = ledger.setdefault(profile.name, [])
                known = {e["hash"]: int(e["version"]) for e in entries}
                version = profile.version or known.get(profile.config_hash)
                if version is None:
                    version = max((int(e["version"]) for e in entries), default=0) + 1
                if known.get(profile.config_hash) != version:
                    entries.append(
                        {
                            "version": version,
                            "hash": profile.config_hash,
                            "first_seen": datetime.now(UTC).isoformat(timespec="seconds"),
                            "settings": profile.settings(),
                        }
                    )
                    changed = True
                numbered.append(replace(profile, version=version))
            if changed:
                self._write(ledger)
        return tuple(numbered)

    def history(self, name: str) -> list[dict[str, Any]]:
        """Every recorded version of one profile, oldest first."""
        return list(self._read().get(name, []))

    def _read(self) -> dict[str, list[dict[str, Any]]]:
        if not self.path.exists():
            return {}
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            profiles = document["profiles"]
            if not isinstance(profiles, dict):
                raise TypeError("'profiles' is not a mapping")
            return profiles
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{self.path} is not a profile version ledger ({exc}); restore it from version control, "
                f"or delete it to number every profile from 1 again"
            ) from None

    def _write(self, ledger: dict[str, list[dict[str, Any]]]) -> None:
        write_text_atomically(
            self.path, json.dumps({"profiles": ledger}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
