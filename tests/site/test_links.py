"""Every link of the built book resolves, checked over the built files (nothing is fetched).

Internal links, cross-references, figure and equation references and citations must point
at a file of the site and, when they carry a #fragment, at an id in that file. Every
external link must be listed in ``external-links.txt`` at the repository root, the one
place where the book's outside links are reviewed; no test fetches them.
"""

from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from bs4 import BeautifulSoup

from tests import harness

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL_LIST = ROOT / "external-links.txt"
BUILT = (harness.HTML / "index.html").exists()
PAGES = harness.book_pages() if BUILT else []
# Attributes that make the browser (or the reader) go somewhere.
LINK_ATTRIBUTES = {"a": ["href"], "area": ["href"], "link": ["href"], "img": ["src"], "script": ["src"],
                   "iframe": ["src"], "source": ["src"], "video": ["src", "poster"], "audio": ["src"],
                   "object": ["data"], "embed": ["src"], "image": ["href", "xlink:href"], "use": ["href", "xlink:href"]}
IGNORED_SCHEMES = {"data", "javascript", "blob", "about"}


@functools.cache
def soup_of(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@functools.cache
def ids_of(path: Path) -> frozenset[str]:
    soup = soup_of(path)
    return frozenset([t["id"] for t in soup.find_all(id=True)] + [t["name"] for t in soup.find_all("a", attrs={"name": True})])


def links_of(page: Path):
    """(tag, attribute, url) for every link-like attribute of one built page."""
    for tag_name, attributes in LINK_ATTRIBUTES.items():
        for tag in soup_of(page).find_all(tag_name):
            for attribute in attributes:
                if tag.get(attribute) is not None:
                    yield tag, attribute, tag[attribute].strip()


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme and parts.scheme not in IGNORED_SCHEMES) or url.startswith("//")


def listed_external_links() -> set[str]:
    lines = EXTERNAL_LIST.read_text(encoding="utf-8").splitlines() if EXTERNAL_LIST.exists() else []
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def external_links() -> dict[str, set[str]]:
    """Every external URL of the built site -> the pages that use it."""
    found: dict[str, set[str]] = {}
    for page in PAGES:
        for _, _, url in links_of(harness.HTML / page):
            if is_external(url):
                found.setdefault(url, set()).add(page)
    return found


@pytest.mark.parametrize("page_path", PAGES)
def test_every_internal_link_and_fragment_resolves(built_html, page_path):
    page = built_html / page_path
    broken = []
    for tag, attribute, url in links_of(page):
        scheme = urlsplit(url).scheme
        if not url or is_external(url) or scheme in IGNORED_SCHEMES:
            continue
        path_part, fragment = urldefrag(url)
        path_part = unquote(urlsplit(path_part).path)  # drop ?v=hash cache busters
        target = page if not path_part else (page.parent / path_part).resolve()
        if target.is_dir():
            target = target / "index.html"
        where = f"<{tag.name} {attribute}={url!r}> ({tag.get_text(' ', strip=True)[:50]!r})"
        if not target.is_file() or not target.resolve().is_relative_to(built_html.resolve()):
            broken.append(f"{where}: no file {target}")
        elif fragment and target.suffix == ".html" and unquote(fragment) not in ids_of(target):
            broken.append(f"{where}: no id {fragment!r} in {target.relative_to(built_html)}")
    assert not broken, f"{page_path}: {len(broken)} broken link(s):\n  " + "\n  ".join(broken)


@pytest.mark.parametrize("page_path", PAGES)
def test_every_cross_reference_and_citation_was_resolved(built_html, page_path):
    """Sphinx leaves an unresolved reference as text (a bare ``xref`` span, no link), and
    sphinxcontrib-bibtex an unknown key as ``[?]``: neither is a broken href, so look for them."""
    soup = soup_of(built_html / page_path)
    article = soup.find("article") or soup
    problems = [f"unresolved reference: {span.get_text(strip=True)!r}"
                for span in article.select("span.xref, code.xref") if span.find_parent("a") is None]
    problems += [f"unresolved citation near {str(a)[:80]!r}" for a in article.find_all(string="[?]")]
    problems += [f"reference to a label without a number: {a.get_text(strip=True)!r}"
                 for a in article.select("a.reference.internal") if a.get_text(strip=True) in {"??", "[?]"}]
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


def configured_prefixes() -> tuple[str, ...]:
    """Addresses that _config.yml's own settings put on the pages, reviewed where they are set:
    with ``repository: url:`` the repository, Binder and Colab buttons (README, "Publishing,
    Binder and Colab"), with ``html: baseurl:`` the pages' canonical addresses."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    prefixes = []
    repository = ((config.get("repository") or {}).get("url") or "").strip().rstrip("/")
    if repository:
        org_repo = "/".join(repository.split("/")[-2:])
        prefixes += [repository, f"https://mybinder.org/v2/gh/{org_repo}/",
                     f"https://colab.research.google.com/github/{org_repo}/"]
    base = ((config.get("html") or {}).get("baseurl") or "").strip()
    if base:
        prefixes.append(base)
    return tuple(prefixes)


def test_every_external_link_is_listed_in_external_links_txt():
    found = external_links()
    configured = configured_prefixes()
    unlisted = {url: pages for url, pages in found.items()
                if url not in listed_external_links() and not (configured and url.startswith(configured))}
    assert not unlisted, (
        f"{len(unlisted)} external link(s) are not listed in {EXTERNAL_LIST.name} (review them, then add "
        "each on its own line):\n  " + "\n  ".join(f"{url}   (in {', '.join(sorted(p))})" for url, p in sorted(unlisted.items())))


def test_external_links_txt_lists_only_links_the_book_uses():
    stale = listed_external_links() - set(external_links())
    assert not stale, f"{EXTERNAL_LIST.name} lists links no page uses any more (remove them):\n  " + "\n  ".join(sorted(stale))
