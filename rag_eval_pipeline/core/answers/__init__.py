"""Answer evaluation: answers built from retrieved chunks, judged against reference answers, plus the
cheap production-style metrics that escalate to an LLM only when they flag a concern."""
