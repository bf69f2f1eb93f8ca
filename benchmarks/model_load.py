"""The local MiniLM's cost to a process: ONNX (onnxruntime, the default once `make setup` exported it)
next to sentence-transformers (torch).

Every process that embeds pays the load: a Dagster step, a run launched from the UI, `rag-eval`. For each
backend, ``--repeats`` fresh processes (interleaved) each import the embedder, load the model and embed
one text; the figure is the median CPU seconds of that, measured inside the child (time.process_time,
so a busy machine barely moves it), and the child's whole CPU (interpreter start included, from
getrusage). Then one more process per backend embeds the demo corpus's chunks of every chunk config
(about 500 passages, batch 64 as the pipeline does): passages per CPU second and per wall second, and the
largest |cosine - 1| between the two backends' vectors of the same passages.

    .venv/bin/python benchmarks/model_load.py [--repeats 5] [--quick]

``--quick``: one load each and 20 passages (the tests' smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("onnx", "torch")

CHILD = r"""
import json, sys, time
start = time.process_time()
if sys.argv[1] == "onnx":
    from rag_eval_pipeline.core.embedding.onnx_embedder import OnnxEmbedder
    embedder = OnnxEmbedder(batch_size=64)
else:
    from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder
    embedder = SentenceTransformerEmbedder(batch_size=64)
embedder.embed(["warm up the model"])
loaded = time.process_time() - start
passages = json.loads(open(sys.argv[2], encoding="utf-8").read()) if len(sys.argv) > 2 else []
cpu, wall = time.process_time(), time.perf_counter()
if passages:
    import numpy as np
    np.save(sys.argv[3], embedder.embed(passages))
print(json.dumps({
    "load_cpu_s": loaded,
    "embed_cpu_s": time.process_time() - cpu,
    "embed_wall_s": time.perf_counter() - wall,
    "torch_imported": "torch" in sys.modules,
}))
"""


def child(backend: str, *extra: str) -> dict:
    """One fresh process; its own figures plus its whole CPU time (getrusage of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, backend, *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=1800,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the {backend} child failed:\n{done.stderr}")
    figures = json.loads(done.stdout.splitlines()[-1])
    figures["process_cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return dict(figures)


def demo_passages(limit: int | None) -> list[str]:
    """The demo corpus's chunks under every chunk config of data/chunk_configs.yaml, each text once."""
    from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
    from rag_eval_pipeline.core.corpus.corpus import Corpus
    from rag_eval_pipeline.core.settings.configs import load_chunk_configs

    corpus = Corpus.from_folder(REPO / "data" / "corpus")
    texts: list[str] = []
    for config in load_chunk_configs(REPO / "data" / "chunk_configs.yaml"):
        texts += [c.text for c in cut_corpus(build_chunker(config), corpus, config.name).chunks]
    return list(dict.fromkeys(texts))[:limit]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per backend (median)")
    parser.add_argument("--quick", action="store_true", help="one load each and 20 passages")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats

    from rag_eval_pipeline.core.embedding.onnx_embedder import (
        EXPORT_COMMAND,
        default_onnx_dir,
        export_state,
        minilm_model_path,
    )

    if export_state(default_onnx_dir(), Path(minilm_model_path())) != "ready":
        print(f"no current ONNX export in {default_onnx_dir()}: run `make setup` or `{EXPORT_COMMAND}`")
        return 1
    print(
        f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; ONNX export {default_onnx_dir()}"
    )

    loads: dict[str, list[dict]] = {b: [] for b in BACKENDS}
    for _ in range(repeats):
        for backend in BACKENDS:  # interleaved: a busy spell hits both
            loads[backend].append(child(backend))
    print(f"\nload in a fresh process (import + load + embed one text), median of {repeats}:")
    median = {b: statistics.median(r["load_cpu_s"] for r in loads[b]) for b in BACKENDS}
    for backend in BACKENDS:
        process = statistics.median(r["process_cpu_s"] for r in loads[backend])
        torch_seen = any(r["torch_imported"] for r in loads[backend])
        print(
            f"  {backend:5} {median[backend]:6.2f} CPU s  (whole process {process:6.2f} CPU s; "
            f"torch imported: {'yes' if torch_seen else 'no'})"
        )
    print(f"  onnx / torch: {median['onnx'] / median['torch']:.3f} (goal: onnx <= 1 CPU s)")

    passages = demo_passages(20 if args.quick else None)
    chars = sum(len(p) for p in passages)
    print(
        f"\nembedding {len(passages)} demo passages ({chars / len(passages):.0f} characters on average), batch 64:"
    )
    with tempfile.TemporaryDirectory() as folder:
        texts = Path(folder) / "passages.json"
        texts.write_text(json.dumps(passages), encoding="utf-8")
        vectors, runs = {}, {}
        for backend in BACKENDS:
            out = Path(folder) / f"{backend}.npy"
            runs[backend] = child(backend, str(texts), str(out))
            vectors[backend] = np.load(out)
    for backend in BACKENDS:
        run = runs[backend]
        print(
            f"  {backend:5} {len(passages) / run['embed_cpu_s']:7.1f} passages per CPU s, "
            f"{len(passages) / run['embed_wall_s']:7.1f} per wall s"
        )
    ratio = runs["torch"]["embed_cpu_s"] / runs["onnx"]["embed_cpu_s"]
    print(f"  onnx speed / torch speed (CPU): {ratio:.2f}")
    cosines = np.sum(vectors["onnx"].astype(np.float64) * vectors["torch"], axis=1)
    print(
        f"\nsame vectors: max |cos - 1| between onnx and torch over the {len(passages)} passages: "
        f"{np.max(np.abs(cosines - 1)):.2e}"
    )
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"total {time.perf_counter() - started:.0f} s")
    raise SystemExit(code)
