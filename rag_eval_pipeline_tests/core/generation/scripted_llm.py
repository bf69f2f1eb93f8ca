"""Scripted replies for the generation prompts: they read the documents or chunks a prompt shows and
answer the way a model would, including the ways models go wrong (a quote not in the text, a quote
with its whitespace and case changed, broken JSON)."""

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


def token_level_reply(body: dict[str, Any]) -> str:
    """Per document: one exact quote and one quote with changed whitespace and case; per pair: one quote
    from each document; a question quoting a sentence that is not in the document when a document
    mentions 'Valves'."""
    prompt = first_user_message(body)
    documents = DOCUMENT.findall(prompt)
    if len(documents) == 2:
        (first_id, first), (second_id, second) = documents
        excerpts = [
            {"doc_id": first_id, "text": sentences(first)[0]},
            {"doc_id": second_id, "text": sentences(second)[0]},
        ]
        return json.dumps(
            {"questions": [{"question": f"How do {first_id} and {second_id} relate?", "excerpts": excerpts}]}
        )
    doc_id, text = documents[0]
    found = sentences(text)
    questions = [
        {
            "question": f"What does {doc_id} say first?",
            "difficulty": "easy",
            "excerpts": [{"doc_id": doc_id, "text": found[0]}],
        },
        {
            "question": f"What else does {doc_id} say?",
            "difficulty": "hard",
            "excerpts": [{"doc_id": doc_id, "text": "  " + found[-1].upper().replace(" ", "\n  ")}],
        },
    ]
    if "Valves" in text:
        questions.append(
            {
                "question": "Who painted the valves?",
                "excerpts": [{"doc_id": doc_id, "text": "The valves were painted blue by Ada Lovelace."}],
            }
        )
    return json.dumps({"questions": questions})


def chunk_level_reply(body: dict[str, Any]) -> str:
    """Density by length (short chunks are SPARSE); questions with keywords from the chunk; a MULTI_HOP
    question when a neighbour is shown."""
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
                "source_chunks": ["A", "B"],
            }
        )
    return json.dumps({"questions": questions})
