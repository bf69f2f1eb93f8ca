"""The settings files under data/: reading, checking and editing them in place."""
