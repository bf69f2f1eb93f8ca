"""The documents: loading a folder, its observed state, the formats a folder may hold."""
