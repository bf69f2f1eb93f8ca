from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.questions.sampling import sample_questions
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId


def dataset(n: int) -> TokenLevelDataset:
    span = CharacterSpan(DocumentId("d.md"), 0, 4, "text")
    return TokenLevelDataset(
        tuple(TokenLevelExample(QuestionId(f"q{i:03d}"), f"question {i}?", (span,)) for i in range(n))
    )


def test_a_seeded_sample_of_the_asked_size_in_dataset_order():
    full = dataset(50)
    sample = sample_questions(full, 10, seed=13)
    ids = [e.question_id for e in sample]
    assert len(ids) == 10 and ids == sorted(ids)
    assert ids == [e.question_id for e in sample_questions(full, 10, seed=13)]  # deterministic
    assert ids != [e.question_id for e in sample_questions(full, 10, seed=14)]
    assert ids != [f"q{i:03d}" for i in range(10)]  # not simply the first ten


def test_adding_questions_keeps_the_sampled_ones_in_unless_they_are_outranked():
    small, large = sample_questions(dataset(50), 10, 13), sample_questions(dataset(60), 10, 13)
    # each question is ranked by its own hash: every question in the larger sample that existed before
    # was also in the smaller one
    before = {e.question_id for e in small}
    assert {e.question_id for e in large if int(e.question_id[1:]) < 50} <= before


def test_a_sample_larger_than_the_dataset_is_the_dataset():
    full = dataset(5)
    assert sample_questions(full, 20, seed=1) is full
