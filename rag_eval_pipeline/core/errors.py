"""Errors that tell a user which file, line, field or key is wrong and what to do about it."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input (corpus, dataset, config). The message names the place and the remedy."""


class CorpusError(InputError):
    pass


class ConfigError(InputError):
    pass


class DatasetError(InputError):
    pass
