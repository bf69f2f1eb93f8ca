"""The HTTP API's bearer tokens (`rag-eval tokens create|list|revoke`), kept in the workspace as
.rag-eval/tokens.json: each token's name, role and the SHA-256 of its text, never the text itself (it is
printed once, when created). A token is 32 random bytes, so a plain hash is enough: there is no
dictionary to try against it. Edits take the file's lock and replace it whole (core/store/files.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from ..core.errors import ConfigError, InputError, NameTakenError, UnknownNameError
from ..core.store.files import locked, write_atomically

Role = Literal["viewer", "admin", "super-user"]
ROLES: tuple[Role, ...] = get_args(Role)
# what each role may do: read (every GET) and write (every other method)
READ_ROLES: frozenset[Role] = frozenset(ROLES)
WRITE_ROLES: frozenset[Role] = frozenset({"admin", "super-user"})

TOKENS_FILE = Path(".rag-eval") / "tokens.json"
TOKEN_PREFIX = "rge_"
NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True)
class ApiToken:
    name: str
    role: Role
    sha256: str
    created: str

    def record(self) -> dict[str, str]:
        """What `tokens list` shows: no hash (it says nothing useful, and is the next best thing to the token)."""
        return {"name": self.name, "role": self.role, "created": self.created}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenStore:
    root: Path  # the workspace

    @property
    def path(self) -> Path:
        return self.root / TOKENS_FILE

    def tokens(self) -> list[ApiToken]:
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [ApiToken(**entry) for entry in raw["tokens"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{self.path} is not a token file rag-eval wrote ({exc}): move it away and create the tokens "
                "again with `rag-eval tokens create NAME --role ROLE`"
            ) from None

    def create(self, name: str, role: str) -> str:
        """A new token for ``name`` with ``role``; returns its text, which is stored only as a hash."""
        if not NAME.match(name):
            raise InputError(
                f"token name {name!r}: use 1-64 letters, digits, '_', '.', '@' or '-' (it is who the runs "
                "it starts are triggered by)"
            )
        if role not in ROLES:
            raise InputError(f"--role {role!r}: choose one of {', '.join(ROLES)}")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with locked(self.path):
            tokens = self.tokens()
            if any(t.name == name for t in tokens):
                raise NameTakenError(
                    f"{self.path} has a token named {name!r} already: `rag-eval tokens revoke {name}` first, "
                    "or choose another name"
                )
            created = datetime.now(UTC).isoformat(timespec="seconds")
            self._write([*tokens, ApiToken(name, role, token_hash(token), created)])
        return token

    def revoke(self, name: str) -> ApiToken:
        with locked(self.path):
            tokens = self.tokens()
            revoked = next((t for t in tokens if t.name == name), None)
            if revoked is None:
                known = ", ".join(t.name for t in tokens) or "none"
                raise UnknownNameError(f"no token named {name!r} in {self.path}; the tokens: {known}")
            self._write([t for t in tokens if t.name != name])
        return revoked

    def holder(self, token: str) -> ApiToken | None:
        """The token whose text is ``token``, compared in constant time; None for any other text."""
        digest = token_hash(token)
        found = None
        for candidate in self.tokens():
            if hmac.compare_digest(candidate.sha256, digest):
                found = candidate
        return found

    def _write(self, tokens: Sequence[ApiToken]) -> None:
        text = json.dumps({"tokens": [asdict(t) for t in tokens]}, indent=2) + "\n"

        def write(temporary: Path) -> None:  # readable by its owner only, from the start
            with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
                out.write(text)

        write_atomically(self.path, write)
