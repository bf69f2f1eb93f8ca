"""The tech spec's HTTP API under /api/v1/eval (`rag-eval serve`): a thin layer over what the commands
call (the runner, the warehouse, the settings owners), with bearer tokens and roles (tokens.py)."""
