"""An evaluation: running it, its scope and size, its results compared, baselines, costs."""
