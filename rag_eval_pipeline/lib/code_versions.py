"""The code version of every asset: the pipeline's own source code and the models it runs with.

Dagster compares an asset's code version with the one its last materialization recorded: a change makes
the asset stale in the UI, and `rag-eval run` and the nightly schedule run it again (lib/freshness.py).
One version for the whole package: any edit of the code that computes results re-runs everything, and
an embedder or LLM switched by environment variable re-runs everything too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import dagster as dg

PACKAGE = Path(__file__).resolve().parent.parent
# What computes results (runner/ and cli/ only run and show them).
_RESULT_CODE = ("core", "lib", "defs", "definitions.py")


@lru_cache(maxsize=1)
def package_code_version() -> str:
    """A hash of the package's result code (its .py files, each by relative path and content)."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for part in _RESULT_CODE:
        path = PACKAGE / part
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for file in files:
        digest.update(file.relative_to(PACKAGE).as_posix().encode())
        digest.update(b"\0")
        digest.update(file.read_bytes())
    return digest.hexdigest()[:12]


def models_version(resources: Mapping[str, object]) -> str:
    """Which embedder and LLM the resources select (their class and configuration, never a secret)."""
    described = []
    for name in ("embedder", "llm"):
        resource = resources.get(name)
        if isinstance(resource, dg.ConfigurableResource):
            config = {
                k: v for k, v in sorted(resource.model_dump().items()) if "key" not in k and "path" not in k
            }
            described.append(f"{name}={type(resource).__qualname__}{config}")
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:8]


def with_code_versions(
    assets: Sequence[dg.AssetsDefinition], resources: Mapping[str, object]
) -> list[dg.AssetsDefinition]:
    """The assets with the code version of this package and these models."""
    version = f"{package_code_version()}-{models_version(resources)}"
    return [
        asset.map_asset_specs(lambda spec: spec.replace_attributes(code_version=version)) for asset in assets
    ]
