"""The project's documents as pages of the published site: the docs, the README, the dataset card.

A researcher who has only the public address of an instance reads the same
Markdown the source tree holds, rendered into the site (`docs/<name>.html`,
`docs/readme.html`, `dataset/index.html`, with `dataset/croissant.json`
beside the card), so it is served like every other page. A link between two
published documents points at the rendered page; a link to a file that is not
published (source code, a data file) keeps its text and loses the link, so no
page links to a 404. A `code` span that names a published document
(`docs/metrics.md`) becomes a link to it.

`read_documents` reads the files where the project keeps them (the source
tree, or `share/expaudit/` of an installed wheel); `render_documents` is pure.
"""

from __future__ import annotations

import posixpath
import re
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from leaderboard.errors import BrokenContract

DATASET_CARD = "benchmark_data/dataset/README.md"
"""Source path of the dataset card (package data of `benchmark_data`)."""
CROISSANT = "benchmark_data/dataset/croissant.json"
"""Source path of the card's Croissant record."""
README = "README.md"

DOCS_INDEX = "docs/index.html"
"""The site page that lists every published document."""

SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The source tree's root when the package runs from it (an editable install or a checkout)."""

INSTALLED_SHARE = Path(sysconfig.get_path("data")) / "share" / "expaudit"
"""Where a wheel install puts the docs and README (`[tool.setuptools] data-files`)."""


@dataclass(frozen=True)
class Documents:
    """The documents to publish, by source path (``docs/metrics.md``, ``README.md``, ...).

    Attributes:
        markdown: source path -> Markdown text; `site_path` says where each is published.
        files: source path -> bytes published as they are (the Croissant record).
    """

    markdown: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.markdown or self.files)


def site_path(source: str) -> str:
    """Where a source document is published in the site (a path relative to its root)."""
    if source == DATASET_CARD:
        return "dataset/index.html"
    if source == CROISSANT:
        return "dataset/croissant.json"
    if source == README:
        return "docs/readme.html"
    if source.startswith("docs/") and source.endswith(".md"):
        return source[:-3] + ".html"
    raise BrokenContract(f"source document {source!r} has no place in the published site")


def read_documents(root: Path | None = None) -> Documents:
    """The project's documents: every ``docs/*.md``, the README and the dataset card.

    Args:
        root: a directory holding ``docs/`` and ``README.md``; None looks in the source
            tree, then in the installed ``share/expaudit``. The dataset card and its
            Croissant record are read from the `benchmark_data` package.
    """
    if root is None:
        root = SOURCE_ROOT if (SOURCE_ROOT / "docs").is_dir() else INSTALLED_SHARE
    markdown: dict[str, str] = {}
    for path in sorted((root / "docs").glob("*.md")):
        markdown[f"docs/{path.name}"] = path.read_text(encoding="utf-8")
    if (root / README).is_file():
        markdown[README] = (root / README).read_text(encoding="utf-8")
    dataset = resources.files("benchmark_data") / "dataset"
    files: dict[str, bytes] = {}
    if (dataset / "README.md").is_file():
        markdown[DATASET_CARD] = (dataset / "README.md").read_text(encoding="utf-8")
    if (dataset / "croissant.json").is_file():
        files[CROISSANT] = (dataset / "croissant.json").read_bytes()
    return Documents(markdown, files)


# ------------------------------------------------------------- rendering --

def _parser() -> MarkdownIt:
    # Raw HTML off: the pages are built from text, and tables as GitHub writes them.
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _target(source: str, href: str, published: Mapping[str, str]) -> str | None:
    """The site-relative link for `href` written in `source`; None when it leads nowhere
    published. Absolute URLs and in-page anchors are kept as they are."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) or href.startswith("#"):
        return href
    path, _, anchor = href.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    if resolved not in published:
        return None
    return _between(published, source, resolved, anchor)


def _between(published: Mapping[str, str], source: str, target: str, anchor: str = "") -> str:
    """The relative link from the page of `source` to the page of `target`."""
    here = posixpath.dirname(published[source])
    link = posixpath.relpath(published[target], here or ".")
    return f"{link}#{anchor}" if anchor else link


def _rewrite(tokens: list[Token], source: str, published: Mapping[str, str]) -> str | None:
    """Point links at published pages, drop the rest, add heading anchors; returns the title."""
    title = None
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            text = tokens[i + 1].content
            token.attrSet("id", slug(text))
            if title is None and token.tag == "h1":
                title = text
        if token.type == "table_open":
            token.attrSet("class", "doc-table")
        if token.type != "inline" or not token.children:
            continue
        children: list[Token] = []
        dropped = 0
        for child in token.children:
            if child.type == "link_open":
                href = _target(source, str(child.attrGet("href") or ""), published)
                if href is None:
                    dropped += 1
                    continue
                child.attrSet("href", href)
            elif child.type == "link_close" and dropped:
                dropped -= 1
                continue
            elif (child.type == "code_inline" and child.content.startswith("docs/")
                  and child.content in published and not dropped):
                opening = Token("link_open", "a", 1,
                                attrs={"href": _between(published, source, child.content)})
                children.extend([opening, child, Token("link_close", "a", -1)])
                continue
            children.append(child)
        token.children = children
    return title


@dataclass(frozen=True)
class RenderedDocument:
    """One document ready for the page template."""

    source: str
    path: str
    title: str
    body_html: str


def render_markdown(documents: Documents) -> list[RenderedDocument]:
    """Every Markdown document as HTML with its links pointed at the published pages."""
    published = {source: site_path(source) for source in [*documents.markdown, *documents.files]}
    parser = _parser()
    out = []
    for source, text in documents.markdown.items():
        tokens = parser.parse(text)
        title = _rewrite(tokens, source, published) or posixpath.basename(source)
        out.append(RenderedDocument(source, published[source], title,
                                    parser.renderer.render(tokens, parser.options, {})))
    return out
