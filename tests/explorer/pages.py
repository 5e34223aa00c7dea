"""Reading the explorer's pages back in tests: the rows and the numbers they carry."""

from __future__ import annotations

from html.parser import HTMLParser


class Elements(HTMLParser):
    """Every element's tag and attributes, in document order; the text of the document."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text_parts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text_parts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.text_parts).split())

    def with_attr(self, name: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.elements if name in attrs]


def cluster_rows(text: str) -> dict[str, tuple[str, int | None, list[tuple[str, int, int]]]]:
    """cluster -> (verdict, total, [(prioritizer, score, weight)]) as the verdict table shows them."""
    out: dict[str, tuple[str, int | None, list[tuple[str, int, int]]]] = {}
    current: str | None = None
    for _, attrs in Elements(text).elements:
        if "data-cluster" in attrs and "data-verdict" in attrs:
            current = attrs["data-cluster"]
            total = attrs["data-total"]
            out[current] = (attrs["data-verdict"], int(total) if total else None, [])
        elif "data-prioritizer" in attrs and current is not None:
            out[current][2].append(
                (attrs["data-prioritizer"], int(attrs["data-score"]), int(attrs["data-weight"]))
            )
    return out


def timeline_rows(text: str) -> list[tuple[int, str]]:
    """(seq, trigger kind) of the timeline, as listed (newest first)."""
    return [(int(a["data-seq"]), a["data-trigger"]) for a in Elements(text).with_attr("data-seq")]
