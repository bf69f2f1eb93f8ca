"""An on-disk response cache keyed by (model, messages, parameters): a re-run, or a run resumed after a
crash, pays for nothing twice. SQLite in WAL mode, so parallel runs on one machine share it."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from ..store.sqlite_store import cache_file, open_shared_db
from ..types import sha256_hex
from .base import ChatMessage, Completion, CompletionParams


def request_key(model_id: str, messages: Sequence[ChatMessage], params: CompletionParams) -> str:
    payload = {
        "model": model_id,
        "messages": [[m.role, m.content] for m in messages],
        "params": asdict(params),
    }
    return sha256_hex(json.dumps(payload, sort_keys=True, ensure_ascii=False))


class ResponseCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = open_shared_db(
            cache_file(self.path, "LLM response cache", "asking the LLM again (paid calls for a paid model)"),
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model_id TEXT NOT NULL, "
            "text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
            "model TEXT NOT NULL, created_at TEXT NOT NULL)",
        )

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, model FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return Completion(row[0], row[1], row[2], row[3]) if row else None

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def put(self, key: str, model_id: str, completion: Completion) -> None:
        """Committed at once: a crash a moment later still keeps what was paid for."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model_id,
                    completion.text,
                    completion.prompt_tokens,
                    completion.completion_tokens,
                    completion.model,
                    datetime.now(UTC).isoformat(),
                ),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
