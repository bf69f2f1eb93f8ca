"""The API's token store: a token is printed once and kept only as its hash; names and roles are checked;
a revoked or altered token is refused; a damaged file is named with what to do."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from rag_eval_pipeline.api.tokens import TOKEN_PREFIX, TokenStore, token_hash
from rag_eval_pipeline.core.errors import ConfigError, InputError, NameTakenError, UnknownNameError


def test_a_token_is_kept_only_as_its_hash_and_found_by_its_text(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    token = store.create("panel", "admin")
    other = store.create("grafana", "viewer")
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40 and token != other
    text = store.path.read_text()
    assert token not in text and other not in text and token_hash(token) in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert json.loads(text)["tokens"][0].keys() == {"name", "role", "sha256", "created"}
    holder = store.holder(token)
    assert holder is not None and (holder.name, holder.role) == ("panel", "admin")
    assert store.holder(token[:-1]) is None and store.holder("") is None
    assert [t.record()["name"] for t in store.tokens()] == ["panel", "grafana"]
    assert "sha256" not in store.tokens()[0].record()
    assert store.revoke("panel").name == "panel"
    assert store.holder(token) is None and store.holder(other) is not None


def test_names_roles_and_a_damaged_file_are_refused_with_what_to_do(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    store.create("panel", "super-user")
    with pytest.raises(NameTakenError, match="has a token named 'panel' already"):
        store.create("panel", "admin")
    with pytest.raises(InputError, match="token name 'a b'"):
        store.create("a b", "admin")
    with pytest.raises(InputError, match="choose one of viewer, admin, super-user"):
        store.create("x", "root")
    with pytest.raises(UnknownNameError, match="no token named 'nope'.*the tokens: panel"):
        store.revoke("nope")
    store.path.write_text("{not json")
    with pytest.raises(ConfigError, match="is not a token file rag-eval wrote"):
        store.holder("anything")
