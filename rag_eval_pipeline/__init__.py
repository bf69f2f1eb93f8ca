"""RAG evaluation pipeline: which chunking and retrieval setup serves a team's documents best.

Torch's OpenMP threads (the local SmolLM2 generator, the cross-encoder, the sentence-transformers
embedder of large corpora, the ONNX export) spin while they wait by default, and on a machine whose
cores are busy with other work (Dagster steps in parallel, a test worker) the spinning costs more than
the work: SmolLM2 writing four questions took 95 CPU s with two cores busy elsewhere and 33 CPU s with
passive waiting (59 and 39 CPU s on an idle machine, the same wall time). The OpenMP runtime reads
OMP_WAIT_POLICY once, when torch loads it, so it is set here, before any module of the package can
import torch; a value the user set is kept."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
