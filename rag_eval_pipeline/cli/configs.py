"""`rag-eval profiles list|show|create|update|delete|clone` and `rag-eval chunk-configs
list|apply|presets`: what is configured, changing it without hand-editing the files under data/, and the
bundled presets (core/settings/chunk_config_presets.py) to copy or apply.

Every edit changes the YAML text in place, entry by entry (core/settings/yaml_entries.py), so the file's
comments and layout survive; only where that cannot be done safely (a flow-style list, block scalars) is
the file rewritten in normalized form, and the output says so. `apply FILE` merges chunk configs by
name (core/settings/chunk_config_edits.py); `apply NAME --document DOC` applies a configured chunk config to more
documents; the profile commands are core/settings/profile_edits.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import yaml

from ..core.errors import ConfigError
from ..core.evaluation.document_scope import DocumentScope
from ..core.project.project_files import ProjectFiles
from ..core.settings.chunk_config_edits import (
    CHUNK_CONFIGS_KEY,
    describe_merge,
    normalized_note,
    read_chunk_config_file,
)
from ..core.settings.chunk_config_presets import load_presets, presets_text
from ..core.settings.configs import DEFAULT_SEPARATORS, ChunkConfig, RetrievalProfile, load_chunk_configs
from ..core.settings.monitoring_settings import EVALUATION_MODES
from ..core.settings.profile_edits import (
    ProfileEdit,
    parse_assignments,
)
from ..core.settings.profile_versions import ProfileVersions
from ..core.settings.yaml_entries import entry_texts
from ..core.text_table import format_table
from .output import add_format_argument, render_records
from .registry import CommandContext, add_command
from .runs import DEFAULT_LAUNCH_URL

PROFILES_FILE = "data/retrieval_profiles.yaml"


# ---------------------------------------------------------------------------------------------------
# listings


def format_profiles(profiles: Sequence[RetrievalProfile]) -> str:
    rows = [
        [
            p.name,
            f"v{p.version}",
            str(p.top_k),
            " + ".join(
                f"{name} {weight:g}" if p.is_fused else name
                for name, weight in (("knn", p.vector_weight), ("bm25", p.keyword_weight))
                if weight > 0
            ),
            "-" if p.similarity_threshold is None else f"{p.similarity_threshold:g}",
            p.reranker or "-",
            "yes" if p.query_rewrite_enabled else "no",
            p.config_hash,
            p.description,
        ]
        for p in profiles
    ]
    header = [
        "profile",
        "version",
        "k",
        "retrievers",
        "threshold",
        "reranker",
        "rewrite",
        "hash",
        "description",
    ]
    return format_table(header, rows)


def format_profile(profile: RetrievalProfile, source: str, versions: ProfileVersions) -> str:
    settings = {k: v for k, v in asdict(profile).items() if k not in ("name", "version", "description")}
    lines = [
        f"profile {profile.name} ({source})",
        f"version: {profile.version}",
        f"hash: {profile.config_hash}",
        f"retrievers: {'+'.join(profile.retrievers)}"
        + (" (fused by weighted RRF)" if profile.is_fused else "")
        + f", {profile.candidate_depth} candidates per retriever",
        f"description: {profile.description or '-'}",
        "settings:",
    ]
    dumped = yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=100)
    lines += [f"  {line}" for line in dumped.splitlines()]
    lines.append(f"versions recorded in {versions.path}:")
    for entry in versions.history(profile.name):
        lines.append(f"  v{entry['version']}  first seen {entry['first_seen']}  hash {entry['hash']}")
    return "\n".join(lines)


def format_chunk_configs(configs: Sequence[ChunkConfig], limit: int) -> str:
    rows = []
    for c in configs:
        other = []
        if c.separators != DEFAULT_SEPARATORS:
            other.append(f"separators {list(c.separators)!r}")
        if c.chunker == "semantic":
            other.append(f"breakpoint_percentile {c.breakpoint_percentile:g}")
        if c.length != "characters":
            other.append(f"length {c.length}")
        if c.counts_tokens:
            other.append(f"tokenizer {c.tokenizer}")
        if c.documents is not None:
            other.append(f"applies to {DocumentScope.of(c).describe()}")
        rows.append(
            [
                c.name,
                c.chunker,
                str(c.chunk_size),
                str(c.chunk_overlap),
                "; ".join(other) or "-",
                c.config_hash,
            ]
        )
    table = format_table(["chunk_config", "chunker", "size", "overlap", "other", "hash"], rows)
    return f"{table}\n{len(configs)} of at most {limit} (max_chunk_configs)"


# ---------------------------------------------------------------------------------------------------
# the commands


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    profiles = add_command(commands, "profiles")
    profile_actions = profiles.add_subparsers(dest="action", required=True)
    listed = profile_actions.add_parser("list", help="every profile with its version and settings hash")
    add_format_argument(listed)
    show = profile_actions.add_parser("show", help="one profile: every setting, version, hash, versions")
    show.add_argument("name")
    setting_help = (
        "a setting as KEY=VALUE, the value read as YAML (top_k=10, keyword_weight=0.4, reranker=null); "
        "repeat for more"
    )
    create = profile_actions.add_parser("create", help=f"add a profile to {PROFILES_FILE}")
    create.add_argument("name")
    create.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=setting_help)
    update = profile_actions.add_parser(
        "update", help="change settings of a profile (a new version is numbered when they change)"
    )
    update.add_argument("name")
    update.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=setting_help)
    update.add_argument(
        "--unset", action="append", default=[], metavar="KEY", help="remove a setting: it takes its default"
    )
    delete = profile_actions.add_parser(
        "delete", help="remove a profile from the file; its partitions, history and versions are kept"
    )
    delete.add_argument("name")
    clone = profile_actions.add_parser(
        "clone", help="copy a profile's settings under a new name (version 1 of the new name)"
    )
    clone.add_argument("name", help="the profile to copy")
    clone.add_argument("new_name", metavar="NEW_NAME")
    clone.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=setting_help)
    for parser in (create, update, delete, clone):
        add_format_argument(parser)
    chunk_configs = add_command(commands, "chunk-configs")
    chunk_actions = chunk_configs.add_subparsers(dest="action", required=True)
    chunk_actions.add_parser("list", help="every chunk config with its settings hash")
    presets = chunk_actions.add_parser(
        "presets",
        help="print the bundled presets (the published studies' configs in cl100k_base tokens) as YAML "
        "to copy into data/chunk_configs.yaml or to `apply`; no workspace needed",
    )
    presets.add_argument("names", nargs="*", metavar="NAME", help="only these presets (default: all)")
    apply = chunk_actions.add_parser(
        "apply",
        help="merge a YAML file of chunk configs into data/chunk_configs.yaml by name, or, with "
        "--document, apply a configured chunk config to more documents",
    )
    apply.add_argument(
        "target",
        metavar="FILE|NAME",
        help="a YAML file of chunk configs (relative to where you run rag-eval); with --document, the name "
        "of a configured chunk config",
    )
    apply.add_argument(
        "--document",
        action="append",
        default=[],
        metavar="DOC_ID",
        help="a document (its path in the corpus folder, or a glob such as 'ops/*.md') the config NAME "
        "applies to as well; repeat for more",
    )
    apply.add_argument("--run", action="store_true", help="then evaluate the added and changed configs")
    apply.add_argument("--mode", choices=EVALUATION_MODES, default="full", help="with --run: quick or full")
    apply.add_argument(
        "--launch",
        nargs="?",
        const=DEFAULT_LAUNCH_URL,
        metavar="URL",
        help="with --run: submit to `dagster dev`",
    )
    add_format_argument(apply)


def chunk_config_presets(names: Sequence[str] = ()) -> str:
    """The presets file as shipped (comments included), or a file of only the named presets."""
    if not names:
        return presets_text()
    presets = {c.name: c for c in load_presets()}
    unknown = [n for n in names if n not in presets]
    if unknown:
        raise ConfigError(f"no preset named {', '.join(unknown)}; the presets are: {', '.join(presets)}")
    entries = entry_texts(presets_text(), CHUNK_CONFIGS_KEY)  # each entry's lines as the file writes them
    return f"{CHUNK_CONFIGS_KEY}:\n" + "".join(entries[n] for n in dict.fromkeys(names))


def run_presets_command(args: argparse.Namespace) -> int:
    print(chunk_config_presets(args.names), end="")
    return 0


PROFILE_EDITS = frozenset({"create", "update", "delete", "clone"})


def run_config_command(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.action == "presets":
        return run_presets_command(args)
    if args.action == "apply":  # the file may not hold valid chunk configs yet
        return _apply(args, files)
    if args.command == "profiles" and args.action in PROFILE_EDITS:
        return _edit_profile(args, files)
    configs = files.load_configs()
    if args.command == "chunk-configs":
        print(format_chunk_configs(configs.chunk_configs, configs.max_chunk_configs))
    elif args.action == "list":
        if args.format == "table":
            print(format_profiles(configs.profiles))
        else:
            print(render_records([profile_record(p) for p in configs.profiles], args.format))
    else:
        print(format_profile(configs.profile(args.name), files.profiles_file, files.profile_versions()))
    return 0


def profile_record(profile: RetrievalProfile) -> dict[str, object]:
    """A profile as one row of --format csv|json: name, version, hash, then every setting."""
    settings = {k: v for k, v in asdict(profile).items() if k not in ("name", "version")}
    return {"profile": profile.name, "version": profile.version, "hash": profile.config_hash, **settings}


def _edit_profile(args: argparse.Namespace, files: ProjectFiles) -> int:
    """`profiles create|update|delete|clone`: the file edited in place (comments kept), the new version
    numbered by the ledger as for a hand edit, a partition added for a new profile
    (runner/settings_edits.py, which the HTTP API calls too)."""
    from ..runner.settings_edits import edit_profile

    change = edit_profile(
        files,
        args.action,
        args.name,
        parse_assignments(getattr(args, "set", [])),
        getattr(args, "unset", []),
        getattr(args, "new_name", None),
    )
    edit, profile = change.edit, change.profile
    record = {"action": edit.action, **profile_record(profile), "source": edit.source}
    if args.format != "table":
        print(render_records([record], args.format))
    else:
        print(_describe_profile_edit(edit, profile, change.before, files.profiles_file))
        if change.partitions.add_profiles:
            print(f"partitions added: profile {', '.join(change.partitions.add_profiles)}")
        if edit.action != "deleted":
            print(f"evaluate it: rag-eval run --profiles {edit.name}")
    if edit.normalized:
        print(normalized_note(files.profiles_file), file=sys.stderr)
    return 0


def _describe_profile_edit(
    edit: ProfileEdit, profile: RetrievalProfile, before: RetrievalProfile | None, source: str
) -> str:
    what = f"profile {profile.name} v{profile.version} (hash {profile.config_hash})"
    if edit.action == "deleted":
        return (
            f"deleted {what} from {source}: its partitions, history and versions are kept; the leaderboard "
            f"lists its rows as removed"
        )
    if edit.action == "cloned":
        return f"cloned {edit.source} as {what} in {source}"
    if edit.action == "created":
        return f"created {what} in {source}"
    changed = ", ".join(edit.changed_keys)
    if before is not None and before.version == profile.version:
        same = "settings that change no result" if before.config_hash == profile.config_hash else "settings"
        return f"updated {what} in {source} ({changed}): same version, {same}"
    old = f"v{before.version}" if before is not None else "?"
    return f"updated {what} in {source} ({changed}): a new version, {old} before"


def _apply(args: argparse.Namespace, files: ProjectFiles) -> int:
    if args.document:
        return _apply_to_documents(args, files)
    source = Path(args.target) if Path(args.target).is_absolute() else args.cwd / args.target
    if not source.is_file():
        configured = [c.name for c in load_chunk_configs(files.path(files.chunk_configs_file))]
        if args.target in configured:
            raise ConfigError(
                f"{args.target} is a configured chunk config: give --document DOC_ID to apply it to more "
                f"documents, or the path of a YAML file of chunk configs to merge"
            )
        raise ConfigError(
            f"{source} does not exist: give the path of a YAML file of chunk configs (or, with --document, "
            f"the name of a configured chunk config: {', '.join(configured)})"
        )
    from ..runner.settings_edits import merge_chunk_config_entries

    merge = merge_chunk_config_entries(files, read_chunk_config_file(source), str(source))
    if args.format == "table":
        print(describe_merge(files.chunk_configs_file, merge))
    else:
        changes = (("added", merge.added), ("changed", merge.changed), ("unchanged", merge.unchanged))
        records = [{"chunk_config": n, "change": change} for change, names in changes for n in names]
        print(render_records(records, args.format, ["chunk_config", "change"]))
    _sync_partitions(files, args.format)
    if not args.run:
        return 0
    return _evaluate(args, files, [*merge.added, *merge.changed])


def _apply_to_documents(args: argparse.Namespace, files: ProjectFiles) -> int:
    """`chunk-configs apply NAME --document DOC`: the config's documents list gains the documents (each
    checked against the corpus); only they are cut, embedded and evaluated by the next run."""
    from ..runner.settings_edits import apply_chunk_config_to_documents

    result = apply_chunk_config_to_documents(files, args.target, args.document)
    applied, corpus_ids, covered = result.applied, result.corpus_ids, result.covered
    record = result.record()
    if args.format != "table":
        print(render_records([record], args.format))
    else:
        print(f"affected_documents: {len(applied.affected)}")
        if applied.after is None:
            print(
                f"{applied.name} applies to every document of the corpus already ({len(corpus_ids)}), so "
                f"{files.chunk_configs_file} is left as it was"
            )
        elif not applied.affected:
            print(
                f"{applied.name} applies to these documents already; {files.chunk_configs_file} is left as it was"
            )
        else:
            print(
                f"{applied.name} now applies to {covered} of {len(corpus_ids)} documents; added: "
                f"{', '.join(applied.affected)}. The next run cuts, embeds and evaluates only what changed; "
                f"its leaderboard rows are not ranked with whole-corpus setups"
            )
    if applied.normalized:
        print(normalized_note(files.chunk_configs_file), file=sys.stderr)
    _sync_partitions(files, args.format)
    if not args.run:
        return 0
    return _evaluate(args, files, [applied.name] if applied.modified else [])


def _sync_partitions(files: ProjectFiles, fmt: str) -> None:
    from ..runner.settings_edits import sync_partitions_of

    changes = sync_partitions_of(files)
    added = [
        f"{kind} {', '.join(names)}"
        for kind, names in (("chunk_config", changes.add_chunk_configs), ("profile", changes.add_profiles))
        if names
    ]
    line = f"partitions added: {'; '.join(added)}" if added else "partitions: already in step"
    print(line, file=sys.stdout if fmt == "table" else sys.stderr)


def _evaluate(args: argparse.Namespace, files: ProjectFiles, chunk_configs: Sequence[str]) -> int:
    from ..runner.evaluate import EvaluationOrder
    from .evaluation import run_evaluation

    if not chunk_configs:
        print("nothing new to evaluate")
        return 0
    order = EvaluationOrder(
        chunk_configs=chunk_configs, mode=args.mode, launch_url=args.launch, show_progress=sys.stderr.isatty()
    )
    return run_evaluation(files, order)


def handle(args: argparse.Namespace, context: CommandContext) -> int:
    if args.command == "chunk-configs" and args.action == "presets":  # shipped with the package: no workspace
        return run_presets_command(args)
    return run_config_command(args, context.files)
