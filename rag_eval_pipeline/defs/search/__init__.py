"""Searching a space of setups by racing them (core/search/): the race, its outcome, its job and sensor."""
