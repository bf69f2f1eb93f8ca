"""What identifies a run: its tags, its evaluation id, the process doing the work."""
