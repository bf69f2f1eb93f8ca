"""Real queries judged by people (and an LLM): imported queries, the pooled passages to judge, the
judgements stored as character spans in the documents, and what they become (a question set)."""
