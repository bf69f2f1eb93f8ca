"""The evaluation questions: datasets, their import, ground truth, re-anchoring, catalogue, sample."""
