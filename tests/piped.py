"""What a command's output must look like on a pipe: no line longer than its content needs.

There is no terminal width to fill, so a rule is as wide as its title and a table as wide as its
widest row: every column exactly as wide as its widest cell plus the one space either side
(docs/operations.md#tables-on-a-pipe).
"""

from __future__ import annotations

from itertools import pairwise

from rich.cells import cell_len

# a rule drawn around (or after) a title: the title, a space either side, a few rule characters
RULE_ENDS_AT_MOST = 10
# the borders of rich's default table box (the header's heavy lines, the body's light ones)
TABLE_EDGES = "┏┃┡│├└"
ROW_EDGES = "┃│"
TOP_JOINS = "┳"


def _table_blocks(lines: list[str]) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line[:1] and line[0] in TABLE_EDGES:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def _assert_table_tight(block: list[str]) -> None:
    top = block[0]
    assert top.startswith("┏"), f"a table without its top border: {top!r}"
    bounds = [0, *(i for i, c in enumerate(top) if c in TOP_JOINS), len(top) - 1]
    rows = [line for line in block if line[0] in ROW_EDGES]
    for line in block:
        assert cell_len(line) == cell_len(top), f"a table line wider than its table: {line!r}"
    for left, right in pairwise(bounds):
        width = right - left - 1
        widest = max(cell_len(row[left + 1 : right].strip()) for row in rows)
        assert widest + 2 == width, f"a column {width} wide for cells at most {widest} wide:\n" + "\n".join(
            block
        )


def assert_lines_fit_content(text: str) -> None:
    """Every rule no wider than its title plus its ends, every table as narrow as its cells."""
    lines = text.splitlines()
    assert lines, "no output"
    for line in lines:
        if line[:1] in tuple(TABLE_EDGES) or "─" not in line:
            continue
        title = line.strip("─ ")
        assert cell_len(line) - cell_len(title) <= RULE_ENDS_AT_MOST, (
            f"a rule {cell_len(line)} wide around a title {cell_len(title)} wide: {line[:120]!r}…"
        )
    for block in _table_blocks(lines):
        _assert_table_tight(block)
