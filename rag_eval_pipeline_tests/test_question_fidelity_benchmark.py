"""benchmarks/question_fidelity.py on a slice of the real data (one corpus, 24 natural questions, 2 x 2
setups, a cheap embedder): every figure it promises is printed for every offline generator, and the
figures are those of its own functions (Kendall's tau of two rankings, the family means)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from rag_eval_pipeline_tests.fakes import HashingEmbedder

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "question_fidelity.py"
SLICE = (
    *("--corpora", "chatlogs", "--limit-questions", "24", "--split-halves", "5"),
    *("--only", "fixed-200-0,recursive-400-50", "--only-profiles", "dense-top5,keyword-top5"),
)


def load_script() -> ModuleType:
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("question_fidelity_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_benchmark_ranks_the_setups_under_every_offline_generator(tmp_path: Path) -> None:
    module = load_script()
    questions = tmp_path / "natural.csv"  # any natural questions, given by --questions
    questions.write_bytes((module.DEFAULT_DATA / "questions.csv").read_bytes())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = module.main([*SLICE, "--questions", str(questions)], embedder=HashingEmbedder())
    text = out.getvalue()
    assert code == 0, text
    assert (
        "setups: 2 chunk configs x 2 profiles (dense-top5, keyword-top5); objective span_recall_1000t" in text
    )
    assert "natural: 24 questions (chatlogs 24)" in text
    for generator in ("paraphrase", "known-item"):
        assert re.search(
            rf"^{generator}: \d+ questions \(chatlogs \d+\); 24 asked for, generated in [0-9.]+ s; "
            r"removed by: generator \(its own checks\) \d+, deduplicate \(cosine >= 0.9\) \d+, "
            r"retrievability \(off\) 0$",
            text,
            re.M,
        )
        row = re.search(
            rf"^{generator}\s+overall\s+24\s+\d+\s+(-?[0-9.]+)\s+(-?[0-9.]+)\s+"
            r"([0-9.]+)/([0-9.]+)\s+nan/nan\s+([0-9.]+)/([0-9.]+)\s+([0-9.]+)\s+(yes|no)\s+(met|no)$",
            text,
            re.M,
        )
        assert row, text
        assert -1.0 <= float(row.group(1)) <= 1.0
        gaps = [abs(float(row.group(i)) - float(row.group(i + 1))) for i in (3, 5)]
        assert float(row.group(7)) == pytest.approx(max(gaps), abs=0.0015)
        assert re.search(rf"^{generator} on overall: winner \S+ x \S+; natural winner \S+ x \S+", text, re.M)
    assert re.search(
        r"natural split-half baseline on overall: median tau -?[0-9.]+ .* over 5 random halves", text
    )
    assert "Overall ranking by question set" in text


def test_kendall_tau_and_family_means_are_those_of_the_rankings() -> None:
    module = load_script()
    setups = [("a", "dense-top5"), ("a", "keyword-top5"), ("b", "dense-top5"), ("b", "keyword-top5")]
    means = dict(zip(setups, (0.9, 0.8, 0.7, 0.6), strict=True))
    same = module.Ranking(tuple(setups), means, {})
    reversed_ = module.Ranking(tuple(reversed(setups)), means, {})
    assert module.rank_agreement(same, same)[0] == pytest.approx(1.0)
    assert module.rank_agreement(same, reversed_)[0] == pytest.approx(-1.0)
    families = {s: ("dense" if s[1].startswith("dense") else "keyword") for s in setups}
    found = module.family_means(same, families)
    assert found["dense"] == pytest.approx(0.8) and found["keyword"] == pytest.approx(0.7)
    assert pd.isna(found["hybrid"])


def test_an_unknown_generator_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    module = load_script()
    assert module.main(["--generators", "paraphrase,nope"], embedder=HashingEmbedder()) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.slow
def test_several_seeds_give_one_question_set_each_and_their_spread(tmp_path: Path) -> None:
    module = load_script()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = module.main(
            [*SLICE, "--generators", "paraphrase", "--seeds", "3,4"], embedder=HashingEmbedder()
        )
    text = out.getvalue()
    assert code == 0, text
    taus = []
    for seed in (3, 4):
        assert re.search(rf"^paraphrase@{seed}: \d+ questions \(chatlogs \d+\); 24 asked for", text, re.M)
        row = re.search(rf"^paraphrase@{seed}\s+overall\s+24\s+\d+\s+(-?[0-9.]+)\s", text, re.M)
        assert row, text
        taus.append(float(row.group(1)))
    assert "Over 2 seeds (3, 4): median (min-max); goals judged on the median" in text
    spread = re.search(
        r"^paraphrase\s+overall\s+(-?[0-9.]+) \((-?[0-9.]+)-(-?[0-9.]+)\)\s+[0-9.]+ \([0-9.]+-[0-9.]+\)\s+"
        r"[0-2] of 2\s+[0-2] of 2\s+(met|no)$",
        text,
        re.M,
    )
    assert spread, text
    assert float(spread.group(1)) == pytest.approx(sum(taus) / 2, abs=0.006)
    assert (float(spread.group(2)), float(spread.group(3))) == (min(taus), max(taus))


def fidelity_of(module: ModuleType, name: str, tau: float, gap: float, in_tier_1: bool) -> object:
    setups = [("a", "dense-top5"), ("b", "dense-top5")]
    natural = {"dense": 0.5, "hybrid": float("nan"), "keyword": float("nan")}
    return module.Fidelity(
        name,
        "overall",
        10,
        10,
        tau,
        tau,
        natural,
        {**natural, "dense": 0.5 + gap},
        setups[0] if in_tier_1 else setups[1],
        setups[0],
        (setups[0],),
    )


def test_the_goals_over_seeds_are_judged_on_the_median() -> None:
    module = load_script()
    seeds = [1, 2, 3]
    results = [
        fidelity_of(module, "paraphrase@1", 0.70, 0.01, True),
        fidelity_of(module, "paraphrase@2", 0.85, 0.05, True),
        fidelity_of(module, "paraphrase@3", 0.90, 0.02, False),
        fidelity_of(module, "known-item@1", 0.9, 0.01, True),
    ]
    (spread,) = module.seed_spreads(results, ["paraphrase"], seeds)
    assert spread.taus == [0.70, 0.85, 0.90] and spread.winners_in_tier_1 == 2
    assert spread.goals_met_on_median  # median tau 0.85, median gap 0.02, winner in tier 1 in 2 of 3
    worse = [*results[:2], fidelity_of(module, "paraphrase@3", 0.75, 0.02, False)]
    assert not module.seed_spreads(worse, ["paraphrase"], seeds)[0].goals_met_on_median  # median 0.75
    once = [results[0], *(fidelity_of(module, f"paraphrase@{s}", 0.9, 0.0, False) for s in (2, 3))]
    assert not module.seed_spreads(once, ["paraphrase"], seeds)[0].goals_met_on_median  # tier 1 once
    table = module.format_seed_spreads([spread], seeds)
    assert re.search(
        r"paraphrase\s+overall\s+0.85 \(0.70-0.90\)\s+0.020 \(0.010-0.050\)\s+2 of 3\s+0 of 3\s+met", table
    )


def test_seeds_are_whole_numbers_named_once() -> None:
    module = load_script()
    assert module.parse_args(["--seeds", "5,7"]).seeds == [5, 7]
    assert module.parse_args(["--seed", "4"]).seeds == [4]
    for bad in ("5,x", "5,5"):
        with pytest.raises(SystemExit):
            module.parse_args(["--seeds", bad])
