"""The user docs read as prose: no paragraph starts in the middle of a sentence, except the one
that finishes the sentence a code block interrupted ("```make demo```, creates `.venv`, …")."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def paragraphs_starting_mid_sentence(text: str) -> list[tuple[int, str]]:
    """(line, text) of each paragraph outside code blocks that starts in lower case without a
    code block right above it to continue (the product's name, `fleetplace`, is lower case)."""
    out = []
    in_code = False
    previous = ""  # the last non-blank line before this one
    blank_before = True
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            previous, blank_before = line, False
            continue
        if in_code:
            continue
        if not line.strip():
            blank_before = True
            continue
        starts = blank_before and re.match(r"[a-z]", line) and not line.startswith("fleetplace")
        if starts and not previous.startswith("```"):
            out.append((number, line))
        previous, blank_before = line, False
    return out


def test_the_rule_finds_a_paragraph_cut_from_its_code_block() -> None:
    cut = "Run it:\n\n```bash\nmake demo\n```\n\nA paragraph.\n\nprints the answer.\n"
    assert paragraphs_starting_mid_sentence(cut) == [(9, "prints the answer.")]
    whole = "Run\n\n```bash\nmake demo\n```\n\nprints the answer.\n"
    assert paragraphs_starting_mid_sentence(whole) == []


def test_no_paragraph_of_the_docs_starts_mid_sentence() -> None:
    found = [
        f"{doc.relative_to(ROOT)}:{number}: {line}"
        for doc in DOCUMENTS
        for number, line in paragraphs_starting_mid_sentence(doc.read_text(encoding="utf-8"))
    ]
    assert found == []
