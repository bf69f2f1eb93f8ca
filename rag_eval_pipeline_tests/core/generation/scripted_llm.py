"""Scripted replies for the generation prompts: they read the documents or chunks a prompt shows and
answer the way a model would, including the ways models go wrong (a quote not in the text, a quote
with its whitespace and case changed, broken JSON). Every question comes with a reference answer built
from the text it quotes, so tests can trace each answer back to its question."""

from __future__ import annotations

import json
import re
from typing import Any

DOCUMENT = re.compile(r'<document id="([^"]+)">\n(.*?)\n</document>', re.DOTALL)
CHUNK = re.compile(r'<chunk id="([AB])">\n(.*?)\n</chunk>', re.DOTALL)
SENTENCE = re.compile(r"[^\n.#-][^\n.]{20,}\.")


def sentences(text: str) -> list[str]:
    return [m.group(0).strip() for m in SENTENCE.finditer(text)]


def first_user_message(body: dict[str, Any]) -> str:
    """The prompt itself, also when a repair request follows it."""
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def answer_for(question: str, quoted: str) -> str:
    """The scripted reference answer: recognisably the quoted text's, and unique per question."""
    return f"{quoted} (answers: {question})"


def token_level_reply(body: dict[str, Any]) -> str:
    """Per document: one exact quote and one quote with changed whitespace and case; per pair: one quote
    from each document; a question quoting a sentence that is not in the document when a document
    mentions 'Valves'. Each question's reference answer is ``answer_for`` its first quoted sentence."""
    prompt = first_user_message(body)
    documents = DOCUMENT.findall(prompt)
    if len(documents) == 2:
        (first_id, first), (second_id, second) = documents
        excerpts = [
            {"doc_id": first_id, "text": sentences(first)[0]},
            {"doc_id": second_id, "text": sentences(second)[0]},
        ]
        question = f"How do {first_id} and {second_id} relate?"
        item = {
            "question": question,
            "excerpts": excerpts,
            "reference_answer": answer_for(question, excerpts[0]["text"]),
        }
        return json.dumps({"questions": [item]})
    doc_id, text = documents[0]
    found = sentences(text)
    questions = [
        {
            "question": f"What does {doc_id} say first?",
            "difficulty": "easy",
            "excerpts": [{"doc_id": doc_id, "text": found[0]}],
            "reference_answer": answer_for(f"What does {doc_id} say first?", found[0]),
        },
        {
            "question": f"What else does {doc_id} say?",
            "difficulty": "hard",
            "excerpts": [{"doc_id": doc_id, "text": "  " + found[-1].upper().replace(" ", "\n  ")}],
            "reference_answer": answer_for(f"What else does {doc_id} say?", found[-1]),
        },
    ]
    if "Valves" in text:
        questions.append(
            {
                "question": "Who painted the valves?",
                "excerpts": [{"doc_id": doc_id, "text": "The valves were painted blue by Ada Lovelace."}],
                "reference_answer": "Ada Lovelace painted them blue.",
            }
        )
    return json.dumps({"questions": questions})


def chunk_level_reply(body: dict[str, Any]) -> str:
    """Density by length (short chunks are SPARSE); questions with keywords from the chunk (the first two
    also named in the question) and a reference answer; a MULTI_HOP question when a neighbour is shown."""
    prompt = first_user_message(body)
    if "Classify its information density" in prompt:
        chunk = prompt.split("Chunk:\n", 1)[1].split("\n\nClassify", 1)[0]
        density = "SPARSE" if len(chunk.split()) < 8 else "DENSE"
        return json.dumps({"density": density, "reason": "scripted"})
    chunks = dict(CHUNK.findall(prompt))
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", chunks["A"])]
    questions = [
        {
            "question": f"What is said about {words[0]} and {words[1]}?",
            "type": "FACTUAL",
            "keywords": words[:4],
            "reference_answer": answer_for("FACTUAL", " ".join(chunks["A"].split())),
            "source_chunks": ["A"],
            "difficulty": "easy",
        }
    ]
    if "B" in chunks:
        other = re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", chunks["B"])
        questions.append(
            {
                "question": f"How does {words[-1]} connect to {other[0] if other else 'the rest'}?",
                "type": "multi-hop",
                "keywords": [*words[-2:], *other[:2], *words][:4],
                "reference_answer": answer_for(
                    "MULTI_HOP", " ".join((chunks["A"] + " " + chunks["B"]).split())
                ),
                "source_chunks": ["A", "B"],
            }
        )
    return json.dumps({"questions": questions})
