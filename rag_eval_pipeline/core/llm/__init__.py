"""LLM access shared by question generation and answer evaluation: one client, any backend."""
