"""Synthetic evaluation questions: token-level (spans) and chunk-level (chunk ids)."""
