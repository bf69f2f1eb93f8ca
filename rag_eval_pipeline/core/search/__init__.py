"""Searching a space of chunk configs and retrieval profiles for the best setups by racing them:
statistical elimination on a growing, nested sample of questions (race.py), instead of grading a
hand-written grid on every question."""
