"""Where results live: the warehouse's files, its history as SQL, retention, and the caches' database."""
