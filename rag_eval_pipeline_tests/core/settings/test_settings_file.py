"""The settings-file reader: every value checked against its field's annotation, errors naming the file
and the key path, for every settings class of the project."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_type_hints

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.answers.settings import AnswerSettings
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.generation.settings import GenerationSettings
from rag_eval_pipeline.core.settings.configs import ChunkConfigsFile, ProfilesFile
from rag_eval_pipeline.core.settings.monitoring_settings import MonitoringSettings
from rag_eval_pipeline.core.settings.settings_file import (
    _parsed,
    build_settings,
    check_value,
    describe,
    parse_yaml,
    read_settings_file,
)

PATH = Path("data/some.yaml")


@dataclass(frozen=True)
class Inner:
    limit: int = 3

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ConfigError(f"inner.limit must be >= 0, got {self.limit}")


@dataclass(frozen=True)
class Entry:
    name: str
    weight: float = 1.0


@dataclass(frozen=True)
class Example:
    count: int = 1
    ratio: float = 0.5
    label: str = "x"
    enabled: bool = False
    mode: Literal["auto", "on", "off"] = "auto"
    cap: float | None = None
    words: tuple[str, ...] = ("a",)
    table: Mapping[str, int] = field(default_factory=dict)
    inner: Inner = field(default_factory=Inner)
    entries: tuple[Entry, ...] = ()
    source: str = field(default="(defaults)", compare=False)


# What YAML can hand over: scalars, lists and mappings of them.
yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)


def holds(annotation: Any, value: object) -> bool:
    """Whether ``value`` is what a field annotated ``annotation`` may hold after reading."""
    if annotation is float:
        return type(value) is float and math.isfinite(value)  # type: ignore[arg-type]
    if annotation is int:
        return type(value) is int
    if annotation in (str, bool):
        return type(value) is annotation
    if annotation == (float | None):
        return value is None or holds(float, value)
    if annotation == tuple[str, ...]:
        return type(value) is tuple and all(type(v) is str for v in value)
    if getattr(annotation, "__origin__", None) is Literal:
        return value in annotation.__args__ and type(value) is str
    if annotation == Mapping[str, int]:
        return type(value) is dict and all(type(k) is str and type(v) is int for k, v in value.items())
    raise AssertionError(annotation)


SCALAR_FIELDS = ["count", "ratio", "label", "enabled", "mode", "cap", "words", "table"]


@pytest.mark.parametrize("key", SCALAR_FIELDS)
@given(value=yaml_values)
def test_any_value_is_read_as_the_field_type_or_refused_naming_file_and_key(key: str, value: object):
    annotation = get_type_hints(Example)[key]
    try:
        read = check_value(annotation, value, PATH, f"section.{key}")
    except ConfigError as exc:
        assert str(exc).startswith(f"{PATH}: section.{key}")
        assert " must be " in str(exc)
    else:
        assert holds(annotation, read), (value, read)


@given(value=yaml_values)
def test_a_whole_file_of_any_values_loads_typed_or_fails_naming_a_key(value: object):
    raw = {"count": value, "inner": {"limit": value}, "entries": [{"name": "e", "weight": value}]}
    try:
        settings = build_settings(Example, raw, PATH)
    except ConfigError as exc:
        assert str(exc).startswith(f"{PATH}: ")
        assert any(key in str(exc) for key in ("count", "inner.limit", "entries[0].weight"))
    else:
        assert type(settings.count) is int and type(settings.inner.limit) is int
        assert type(settings.entries[0].weight) is float


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"count": True}, "count must be an integer, got true"),
        ({"count": "3"}, "count must be an integer, got '3'"),
        ({"ratio": "high"}, "ratio must be a number, got 'high'"),
        ({"ratio": float("nan")}, "ratio must be a number, got nan"),
        ({"label": 5}, "label must be a string, got 5"),
        ({"enabled": "yes"}, "enabled must be true or false, got 'yes'"),
        ({"mode": "sometimes"}, "mode must be one of auto, on, off; got 'sometimes'"),
        ({"cap": "none"}, "cap must be a number or null, got 'none'"),
        ({"words": "abc"}, "words must be a list of strings, got 'abc'"),
        ({"words": ["a", 2]}, "words[1] must be a string, got 2"),
        ({"table": ["a"]}, "table must be a mapping, got ['a']"),
        ({"table": {"a": 1.5}}, "table.a must be an integer, got 1.5"),
        ({"inner": 4}, "inner must be a mapping of settings, got 4"),
        ({"inner": {"limit": -1}}, "inner.limit must be >= 0, got -1"),
        ({"inner": {"limits": 1}}, "unknown key(s) inner.limits; known under inner: limit"),
        ({"entries": [{"weight": 1}]}, "missing key(s) entries[0].name"),
        ({"entries": [None]}, "entries[0] must be a mapping of settings, got null"),
        ({"entries": {"name": "e"}}, "entries must be a list of mappings of settings, got {'name': 'e'}"),
        ({"source": "mine"}, "unknown key(s) source"),
    ],
)
def test_errors_name_the_file_and_the_key_path(raw: dict[str, object], message: str):
    with pytest.raises(ConfigError) as err:
        build_settings(Example, raw, PATH, fixed={"source": str(PATH)})
    assert str(err.value).startswith(f"{PATH}: {message}")


def test_values_are_read_into_the_field_types():
    settings = build_settings(
        Example,
        {
            "ratio": 2,
            "mode": False,  # YAML 1.1 reads a bare `off` as false
            "cap": None,
            "words": ["x", "y"],
            "inner": None,  # an empty section keeps its defaults
            "entries": [{"name": "e", "weight": 3}],
        },
        PATH,
        fixed={"source": "file"},
    )
    assert settings.ratio == 2.0 and type(settings.ratio) is float
    assert settings.mode == "off" and settings.cap is None and settings.words == ("x", "y")
    assert settings.inner == Inner() and settings.entries == (Entry("e", 3.0),)
    assert settings.source == "file"


SETTINGS_CLASSES = [ChunkConfigsFile, ProfilesFile, GenerationSettings, AnswerSettings, MonitoringSettings]


def nested_classes(cls: type) -> list[type]:
    """``cls`` and every settings dataclass reachable from its fields."""
    found = [cls]
    for annotation in get_type_hints(cls).values():
        for candidate in (annotation, *getattr(annotation, "__args__", ())):
            if dataclasses.is_dataclass(candidate) and isinstance(candidate, type) and candidate not in found:
                found += nested_classes(candidate)
    return found


@pytest.mark.parametrize("cls", SETTINGS_CLASSES, ids=lambda c: c.__name__)
def test_every_key_of_every_settings_file_has_a_type_the_reader_checks(cls: type):
    for settings_class in nested_classes(cls):
        for name, annotation in get_type_hints(settings_class).items():
            assert describe(annotation), f"{settings_class.__name__}.{name}"


@pytest.mark.parametrize(
    ("cls", "raw", "message"),
    [
        (
            GenerationSettings,
            {"llm": {"max_tokens": "many"}},
            "llm.max_tokens must be an integer, got 'many'",
        ),
        (
            GenerationSettings,
            {"langsmith": {"dataset_prefix": 7}},
            "langsmith.dataset_prefix must be a string",
        ),
        (AnswerSettings, {"semantic": {"labels": None}}, "semantic.labels must be a string, got null"),
        (
            MonitoringSettings,
            {"regression": {"metrics": "mrr"}},
            "regression.metrics must be a list of strings",
        ),
        (MonitoringSettings, {"quick": {"seed": 1.5}}, "quick.seed must be an integer, got 1.5"),
    ],
)
def test_each_settings_file_refuses_a_wrong_type_naming_the_key(cls: type, raw: dict, message: str):
    with pytest.raises(ConfigError) as err:
        build_settings(cls, raw, PATH, fixed={"source": str(PATH)})
    assert str(err.value).startswith(f"{PATH}: {message}")


def test_a_settings_text_is_parsed_once_and_every_reader_gets_its_own_copy(tmp_path: Path):
    path = tmp_path / "monitoring.yaml"
    path.write_text("quick:\n  sample_size: 7\nregression:\n  metrics: [mrr]\n", encoding="utf-8")
    first = read_settings_file(path)
    assert first is not None
    first["regression"]["metrics"].append("span_iou")  # a reader changing what it got
    hits = _parsed.cache_info().hits
    again = read_settings_file(path)
    assert _parsed.cache_info().hits == hits + 1  # the same text: not parsed again
    assert again == {"quick": {"sample_size": 7}, "regression": {"metrics": ["mrr"]}}
    path.write_text("quick:\n  sample_size: 8\n", encoding="utf-8")  # an edit is read as edited
    assert read_settings_file(path) == {"quick": {"sample_size": 8}}


def test_a_settings_class_annotations_are_resolved_once(monkeypatch: pytest.MonkeyPatch):
    import rag_eval_pipeline.core.settings.settings_file as settings_file

    @dataclass(frozen=True)
    class Section:
        inner: Inner = Inner()
        entries: tuple[Entry, ...] = ()

    resolved: list[type] = []

    def counting(cls: type) -> dict[str, object]:
        resolved.append(cls)
        return get_type_hints(cls)

    monkeypatch.setattr(settings_file, "get_type_hints", counting)
    monkeypatch.setattr(settings_file, "_FIELD_TYPES", {})
    for limit in (1, 2, 3):
        raw = {"inner": {"limit": limit}, "entries": [{"name": "a"}, {"name": "b", "weight": 2}]}
        built = build_settings(Section, raw, PATH)
        assert built == Section(Inner(limit), (Entry("a"), Entry("b", 2.0)))  # each file's own values
    assert sorted(c.__name__ for c in resolved) == ["Entry", "Inner", "Section"]  # once per class


def test_invalid_yaml_quotes_the_bad_line_with_a_caret():
    with pytest.raises(yaml.YAMLError) as raised:
        parse_yaml("profiles:\n  - name: [top2\n    top_k: 2\n")
    assert "  - name: [top2\n" in str(raised.value) and "^" in str(raised.value)
