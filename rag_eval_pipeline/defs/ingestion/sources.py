"""What the pipeline reads from outside, as observable source assets: the documents, each chunk config,
each retrieval profile, the settings of questions and answers, which setups are configured and what the
leaderboard ranks them by.

Their data versions are core/project/source_versions.py's, whoever records them: `rag-eval run`, the nightly
schedule and the sensors report them as observations (lib/freshness.py), and the UI's "Observe sources"
runs ``project_sources``, which records the same versions. A changed source makes the partitions that
read it stale, in the UI as in `rag-eval run`, and they are what a run does not skip.

They are *observable* because that is how Dagster's own staleness (the UI's "Upstream data", GraphQL's
``staleCauses``) reads a source's current version from its observations: of an unpartitioned external
asset that is not observable it reads materializations only, finds none and takes the default version,
which differs from the observed one every run recorded as read, so every asset that read such a source
looked stale after every run (issue 30).
"""

import warnings
from collections.abc import Callable, Iterator

import dagster as dg

from ...core.project.source_versions import source_versions
from ...core.runs.run_tags import DATA_VERSION_TAG
from ...lib.freshness import (
    CHUNK_CONFIG_SETTINGS,
    CONFIGURED_SETUPS,
    DOCUMENTS,
    LEADERBOARD_SETTINGS,
    PROJECT_SETTINGS,
    RETRIEVAL_PROFILE_SETTINGS,
    source_observations,
)
from ...lib.partitions import chunk_config_partitions, profile_partitions
from ...lib.resources import ProjectResource
from ...lib.step_redaction import redacts_secrets

# skippable: a source that cannot be looked at (configs that do not load) is not observed
SOURCE_SPECS = [
    dg.AssetSpec(DOCUMENTS, description="The files of the corpus folder.", skippable=True),
    dg.AssetSpec(
        PROJECT_SETTINGS,
        description="data/generation.yaml, data/answer_evaluation.yaml and the golden dataset.",
        skippable=True,
    ),
    dg.AssetSpec(
        CHUNK_CONFIG_SETTINGS,
        partitions_def=chunk_config_partitions,
        description="Each chunk config of data/chunk_configs.yaml.",
        skippable=True,
    ),
    dg.AssetSpec(
        RETRIEVAL_PROFILE_SETTINGS,
        partitions_def=profile_partitions,
        description="Each retrieval profile of data/retrieval_profiles.yaml.",
        skippable=True,
    ),
    dg.AssetSpec(
        CONFIGURED_SETUPS,
        description="Which chunk configs and profiles the files name: what the leaderboard ranks.",
        skippable=True,
    ),
    dg.AssetSpec(
        LEADERBOARD_SETTINGS,
        description="The leaderboard's objective: the leaderboard section of data/monitoring.yaml.",
        skippable=True,
    ),
]


@redacts_secrets
def project_sources(context: dg.AssetExecutionContext) -> Iterator[dg.ObserveResult]:
    """The selected sources' versions now, as `rag-eval run` records them (each chunk config's and
    profile's as an observation of its partition)."""
    project = context.resources.project
    assert isinstance(project, ProjectResource)
    for key, partition, version in source_observations(source_versions(project.files())):
        if key not in context.selected_asset_keys:
            continue
        if partition is None:
            yield dg.ObserveResult(asset_key=key, data_version=dg.DataVersion(version))
        else:
            context.log_event(dg.AssetObservation(key, partition=partition, tags={DATA_VERSION_TAG: version}))


def _observable(fn: Callable[..., Iterator[dg.ObserveResult]]) -> dg.AssetsDefinition:
    """``fn`` as the sources' observation. Observable sources are a Dagster beta feature, chosen for the
    staleness above: its BetaWarning, that one alone, is acknowledged here instead of being printed at
    every load (a deprecation or any other warning still shows). can_subset: the specs' partitions
    differ (Dagster then requires it), and the UI can observe any of them."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "Function `multi_observable_source_asset` is currently in beta", category=dg.BetaWarning
        )
        decorate = dg.multi_observable_source_asset(
            specs=SOURCE_SPECS, group_name="ingestion", required_resource_keys={"project"}, can_subset=True
        )
    return decorate(fn)


SOURCE_ASSETS = [_observable(project_sources)]
