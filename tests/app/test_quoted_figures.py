#!/usr/bin/env python3
"""Figures quoted in README.md and in the header comments of inputs/*.ini must be recorded in
bench/RESULTS.md, under the block the quote names (docs/style.md, "Benchmarks").

The convention. A sentence that quotes a measured figure -- a number with a unit of time
(s, ms, µs, min, minutes, h, CPU-seconds), a rate (GB/s, pairs/s, steps/s) or a percentage --
cites the RESULTS.md block that holds it:

    ... 0.82 s a step on an NVIDIA H100 (`bench/RESULTS.md`, 2026-11-25 "the vortex solver
    against the spectral reference") ...

that is `bench/RESULTS.md` (backticks optional), a comma, the block's date and, in straight
double quotes, the start of the block's title (the text after "DATE — " in its "## " heading,
spaces normalised), which must pick exactly one block. A later sentence of the same paragraph
(or list item, or deck header) may cite that block again by the words "the same block". Every
number of the citing sentence
must then appear in that block's text (heading to the next "## " heading), as written or
rounded from a more precise value there ("0.9 %" quotes "0.89 %"; "35 s" quotes "34.6 s").
Not counted: the citation itself, `inline code` (deck keys, commands), command-line options
(--key=value), and digits inside names (H100, fp64, sm_90). Spaces, thin spaces and no-break
spaces between digit groups are one number ("1 500"); superscripts are exponents (128³ is 128
and 3); signs are ignored.

A sentence ends at ".", "!" or "?" followed by a space and a capital letter, a backtick or
"(", or at a blank line, a list item or a heading; fenced code blocks are skipped. A figure
derived from recorded ones (a total from a time per step) is either recorded in the block too
or left to the reader.

Run: python3 tests/app/test_quoted_figures.py [REPO] (ctest: docs.quoted_figures). It first
checks itself on made-up text (a wrong figure, a missing citation, an unknown block must each
fail), then the real files; exit 1 with one line per failure.
"""
import glob
import os
import re
import sys

CITATION = re.compile(r'`?bench/RESULTS\.md`?,\s*(\d{4}-\d{2}-\d{2})\s+"([^"]+)"')
HEADING = re.compile(r"^## (\d{4}-\d{2}-\d{2}) — (.*)$", re.M)
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
# Digit groups joined by a space, thin space, narrow or plain no-break space: one number.
GROUPED = re.compile(r"(?<=\d)[ \u2009\u202f\u00a0](?=\d{3}(?!\d))")
NUMBER = re.compile(r"(?<![A-Za-z_\d.])(\d+(?:\.\d+)?(?:[eE][-+−]?\d+)?)(?![A-Za-z_\d])")
FIGURE = re.compile(
    r"(?<![A-Za-z_\d.])\d+(?:\.\d+)?\s?"
    r"(?:%|s\b|ms\b|µs\b|min\b|minutes?\b|h\b|hours?\b|CPU-seconds|GB/s|G pairs/s|steps/s)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def normalise(text):
    """Spaces normalised, superscripts as ^exponents, digit groups joined."""
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: "^" + m.group(0).translate(SUPERSCRIPTS), text)
    text = GROUPED.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


def numbers(text):
    """The numbers of `text` as (string, value), names and signs aside."""
    return [(m.group(1), float(m.group(1).replace("−", "-"))) for m in NUMBER.finditer(text)]


def half_unit(s):
    """Half a unit in the last place of the number as written: the rounding it allows."""
    mantissa, _, exponent = s.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals + (int(exponent.replace("−", "-")) if exponent else 0))


def recorded(quoted, block_values):
    s, v = quoted
    tol = half_unit(s) * (1 + 1e-9)
    return any(abs(b - v) <= tol for b in block_values)


def blocks(results_text):
    """{(date, title)}: text of every "## DATE — TITLE" block of RESULTS.md."""
    heads = list(HEADING.finditer(results_text))
    out = {}
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(results_text)
        out[(h.group(1), normalise(h.group(2)))] = results_text[h.start():end]
    return out


def paragraphs_of_markdown(text):
    """Paragraphs (list items and headings on their own) of a markdown file, code fences out."""
    text = re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.M | re.S)
    paras, cur = [], []
    for line in text.splitlines():
        starts_item = re.match(r"\s*(?:[-*] |\d+\. |#)", line)
        if not line.strip() or starts_item:
            if cur:
                paras.append(" ".join(cur))
            cur = [line] if line.strip() else []
        else:
            cur.append(line)
    if cur:
        paras.append(" ".join(cur))
    return paras


def header_of_deck(text):
    """The leading comment of an INI deck as one paragraph."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#"))
    return [" ".join(lines)]


def sentences(paragraph):
    return SENTENCE_END.split(normalise(paragraph))


def check(name, paragraphs, results_blocks):
    """Failures (one line each) of the sentences of `paragraphs` from file `name`."""
    failures = []
    for para in paragraphs:
        last = None  # the paragraph's last citation, for "the same block"
        for sentence in sentences(para):
            cites = [(c.group(1), normalise(c.group(2))) for c in CITATION.finditer(sentence)]
            if not cites and last and "the same block" in sentence:
                cites = [last]
            bare = CITATION.sub(" ", sentence)
            bare = re.sub(r"`[^`]*`", " ", bare)
            bare = re.sub(r"--[\w.-]+(?:=\S*)?", " ", bare)
            short = sentence if len(sentence) < 110 else sentence[:107] + "..."
            if not cites:
                if FIGURE.search(bare):
                    failures.append(f"{name}: a figure without its bench/RESULTS.md block: {short}")
                continue
            last = cites[-1]
            values, bad_cite = [], False
            for date, title in cites:
                hits = [t for (d, head), t in results_blocks.items() if d == date and head.startswith(title)]
                if len(hits) != 1:
                    failures.append(f'{name}: {date} "{title}" names {len(hits)} blocks of bench/RESULTS.md '
                                    f"(allowed: the start of exactly one block's title)")
                    bad_cite = True
                    continue
                values += [v for _, v in numbers(normalise(hits[0]))]
            if bad_cite:
                continue
            missing = [s for s, v in numbers(bare) if not recorded((s, v), values)]
            if missing:
                failures.append(f"{name}: {', '.join(missing)} not in the cited block: {short}")
    return failures


def self_test():
    """The checker must fail a wrong figure, a missing citation and an unknown block."""
    results = blocks("## 2026-01-02 — the run (issue 1), CPU\n\nIt took 34.6 s; K within 0.11 %, "
                     "1 500 cases, 128³ points.\n\n## 2026-01-03 — another\n\n99 s\n")
    cite = '(`bench/RESULTS.md`, 2026-01-02 "the run")'
    cases = {
        f"It takes 35 s at 128³ {cite}, K within 0.1 % and 1 500 cases.": 0,
        f"It takes 35 s at 128³ {cite}, K within 0.2 %.": 1,        # 0.2 is not 0.11
        f"It takes 99 s {cite}.": 1,                                 # 99 is another block's
        "It takes 35 s.": 1,                                         # no citation
        '(`bench/RESULTS.md`, 2026-01-02 "no such run") 35 s.': 1,    # unknown block
        f"The deck {cite}: `n = 777`, --domain.n=777, on an H100.": 0,  # code, options, names
        f"It takes 35 s {cite}. Then 0.11 % (the same block).": 0,
        f"It takes 35 s {cite}. Then 0.12 % (the same block).": 1,    # not in it
        "Then 0.11 % (the same block).": 1,                           # no block before it
    }
    for text, want in cases.items():
        got = len(check("self-test", [text], results))
        if got != want:
            return [f"self-test: {got} failures (wanted {want}) for: {text}"]
    return []


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    failures = self_test()
    with open(os.path.join(repo, "bench", "RESULTS.md"), encoding="utf-8") as f:
        results = blocks(f.read())
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        failures += check("README.md", paragraphs_of_markdown(f.read()), results)
    for deck in sorted(glob.glob(os.path.join(repo, "inputs", "*.ini"))):
        with open(deck, encoding="utf-8") as f:
            failures += check(os.path.relpath(deck, repo), header_of_deck(f.read()), results)
    for line in failures:
        print(line)
    print(f"{len(failures)} failures" if failures else "every quoted figure is in its bench/RESULTS.md block")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
