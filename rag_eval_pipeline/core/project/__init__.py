"""The project on disk: where its files are, a workspace, what it reads from outside, its workload."""
