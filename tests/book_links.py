#!/usr/bin/env python3
"""Fails on a broken internal link of the book (docs/src) or of README.md.

mdbook has no link checker of its own. This one reads the Markdown (outside code blocks and code
spans) and checks every relative link:

- a link in the book must stay inside docs/src (mdbook renders only those pages; a link to a
  repository file outside it would be a dead `.html` link in the built book: write the path as
  code instead), name a file that exists, and, for a page, one that SUMMARY.md lists;
- an `#anchor` must be the id of a heading of the page it points to, computed as mdbook computes
  heading ids (lower case; letters, digits, `-` and `_` kept; white space to `-`; the rest
  dropped; a repeated id gets `-1`, `-2` …);
- README.md's links are resolved from the repository's root (so they may point anywhere in it),
  and its anchors into the book are checked the same way.

With `--html DIR` (the build output, docs/book), every page SUMMARY.md lists must have been built,
and every heading id computed here (so every anchor a link uses) must be an id of the built page,
so a change in mdbook's ids is caught too. Prints every broken link with its file and line, exit
status 1; 0 when all hold.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOK_SRC = os.path.join(ROOT, "docs", "src")

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks, code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield number, re.sub(r"`+[^`]*`+", lambda m: " " * len(m.group(0)), line)


def heading_text(raw):
    """A heading's text as rendered: code spans' content kept, links' text kept, emphasis dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "")


def heading_id(text):
    out = []
    for ch in text:
        if ch.isalnum() or ch in "-_":
            out.append(ch.lower())
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def anchors(path):
    """Every heading id of a Markdown file, as mdbook gives them."""
    ids, seen = set(), {}
    fence = None
    for line in open(path, encoding="utf-8").read().split("\n"):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        m = HEADING.match(line)
        if not m:
            continue
        base = heading_id(heading_text(m.group(2)))
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    return ids


def summary_pages():
    """The pages SUMMARY.md lists, as paths relative to docs/src."""
    text = open(os.path.join(BOOK_SRC, "SUMMARY.md"), encoding="utf-8").read()
    return {os.path.normpath(t.split("#")[0]) for _, line in prose_lines(text) for t in LINK.findall(line)}


def check(md_path, base_dir, in_book, listed, problems, used_anchors):
    rel = os.path.relpath(md_path, ROOT)
    text = open(md_path, encoding="utf-8").read()
    for number, line in prose_lines(text):
        for target in LINK.findall(line):
            if SCHEME.match(target) or target.startswith("//"):
                continue
            where = f"{rel}:{number}: ({target})"
            path, _, fragment = target.partition("#")
            dest = md_path if path == "" else os.path.normpath(os.path.join(base_dir, path))
            if in_book and os.path.commonpath([dest, BOOK_SRC]) != BOOK_SRC:
                problems.append(f"{where} leaves docs/src: the built book has no such page (write the path as code)")
                continue
            if not os.path.exists(dest):
                problems.append(f"{where} names {os.path.relpath(dest, ROOT)}, which does not exist")
                continue
            in_src = os.path.commonpath([dest, BOOK_SRC]) == BOOK_SRC
            page = os.path.relpath(dest, BOOK_SRC)
            if in_src and dest.endswith(".md") and page != "SUMMARY.md" and page not in listed:
                problems.append(f"{where} names {page}, which SUMMARY.md does not list (mdbook does not build it)")
                continue
            if fragment and dest.endswith(".md"):
                if fragment not in anchors(dest):
                    problems.append(f"{where} names #{fragment}, which is no heading of {os.path.relpath(dest, ROOT)}")
                elif in_src:
                    used_anchors.append((where, page, fragment))


def check_html(html_dir, listed, used_anchors, problems):
    """The built book has every listed page and every anchor a link uses."""
    for page in sorted(listed):
        html = os.path.join(html_dir, page[: -len(".md")] + ".html")
        if not os.path.exists(html):
            problems.append(f"{os.path.relpath(html, ROOT)}: not built, though SUMMARY.md lists {page}")
    for page in sorted(listed):
        html = os.path.join(html_dir, page[: -len(".md")] + ".html")
        if not os.path.exists(html):
            continue
        built = set(re.findall(r'<h[1-6] id="([^"]+)"', open(html, encoding="utf-8").read()))
        for fragment in sorted(anchors(os.path.join(BOOK_SRC, page)) - built):
            problems.append(f"docs/src/{page}: this check's heading id {fragment!r} is not one mdbook built")
    for where, page, fragment in used_anchors:
        html = os.path.join(html_dir, page[: -len(".md")] + ".html")
        if os.path.exists(html) and f'id="{fragment}"' not in open(html, encoding="utf-8").read():
            problems.append(f"{where}: the built {os.path.relpath(html, ROOT)} has no id {fragment!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--html", help="the built book (docs/book) to hold the anchors to")
    args = parser.parse_args()
    problems, used = [], []
    listed = summary_pages()
    for page in sorted(listed):
        if not os.path.exists(os.path.join(BOOK_SRC, page)):
            problems.append(f"docs/src/SUMMARY.md: lists {page}, which does not exist")
    pages = 0
    for dirpath, _, files in os.walk(BOOK_SRC):
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = os.path.join(dirpath, name)
            page = os.path.relpath(path, BOOK_SRC)
            if page != "SUMMARY.md" and page not in listed:
                problems.append(f"docs/src/{page}: not listed in SUMMARY.md (mdbook does not build it)")
            check(path, dirpath, True, listed, problems, used)
            pages += 1
    check(os.path.join(ROOT, "README.md"), ROOT, False, listed, problems, used)
    if args.html:
        check_html(os.path.abspath(args.html), listed, used, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"book_links: {len(problems)} broken link(s)", file=sys.stderr)
        return 1
    print(f"book_links: {pages} pages and README.md, {len(used)} anchors into the book: every link resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
