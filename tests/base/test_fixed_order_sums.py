#!/usr/bin/env python3
"""No sum of floating-point numbers in the solvers' code may depend on the order in which threads
finish (base/ordered_sum.h; docs/design.md, "Checkpoints").

An OpenMP reduction(+) on a double, an atomic update of a double or per-thread partial sums merged
under `omp critical` add in the order the threads finish. On more than two threads the last bit
of the result then changes from run to run: a run's monitors, its T0 and with it every output time
and time step, and so a restart, stop repeating (stop 80 found this in the spectrum's shells). On
two threads the two partial sums commute, so CI's machine cannot see it; this check reads the
code instead. It fails on, in base/, fmm/, spectral/, vortex/ and src/:

- `#pragma omp ... reduction(+ : v)` (or - or *) inside a parallel or worksharing construct where
  the nearest declaration of v above it is not of an integer type (a `#pragma omp simd`
  reduction alone runs on one thread, in an order fixed by the compiled code, and is allowed);
- `#pragma omp critical` and `#pragma omp atomic`.

Use ordered_sum (base/ordered_sum.h) or plane_sums (src/core/diagnostics.cpp) for sums of
doubles; count integers with reduction(+); max and min reductions are exact in any order.

Run: python3 tests/base/test_fixed_order_sums.py [REPO] (ctest: lint.fixed_order_sums). It first
checks itself on made-up code, then the real files; exit 1 with one line per finding.
"""
import os
import re
import sys

DIRS = ("base", "fmm", "spectral", "vortex", "src")
SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
INTEGER = re.compile(r"^(?:const\s+)?(?:(?:unsigned|signed)\s+)?(?:long\s+long|long|int|short|char|bool|"
                     r"(?:std::)?(?:size_t|ptrdiff_t|u?int(?:8|16|32|64)_t))(?:\s+int)?$")
REDUCTION = re.compile(r"reduction\s*\(\s*([+*-])\s*:\s*([^)]*)\)")
DECLARATION = re.compile(r"^\s*((?:const\s+)?(?:(?:unsigned|signed)\s+)?(?:long\s+long|[\w:<>]+)(?:\s+int)?)\s+"
                         r"(?!return\b)(.*)$")


def pragmas(lines):
    """(line number, pragma text with its continuations joined) of every `#pragma omp`."""
    i = 0
    while i < len(lines):
        start = i
        text = lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        if re.match(r"#\s*pragma\s+omp\b", text):
            yield start, text
        i += 1


def declared_type(lines, before, name):
    """The type of the nearest declaration of `name` above line `before`, or None."""
    for line in reversed(lines[:before]):
        code = line.split("//")[0]
        m = DECLARATION.match(code)
        if not m:
            continue
        # the declarators: names at the top level of a comma list, before any initialiser
        decls, depth, names, token = m.group(2), 0, [], ""
        for ch in decls + ",":
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            if ch in ",;" and depth == 0:
                names.append(re.split(r"[=({\[]", token)[0].strip().lstrip("*&"))
                token = ""
            else:
                token += ch
        if name in names:
            return m.group(1)
    return None


def findings(path, text):
    lines = text.splitlines()
    out = []
    for n, pragma in pragmas(lines):
        where = f"{path}:{n + 1}"
        if re.search(r"\bcritical\b", pragma):
            out.append(f"{where}: `omp critical` merges in the order the threads arrive; use ordered_sum")
        if re.search(r"\batomic\b", pragma):
            out.append(f"{where}: `omp atomic` updates in the order the threads arrive; use ordered_sum")
        simd_only = re.match(r"#\s*pragma\s+omp\s+simd\b", pragma)
        for op, names in REDUCTION.findall(pragma):
            if simd_only:
                continue
            for name in (v.strip() for v in names.split(",")):
                t = declared_type(lines, n, name)
                if t is None or not INTEGER.match(t.strip()):
                    out.append(f"{where}: reduction({op} : {name}) on {t or 'an undeclared type'} adds in "
                               f"the order the threads finish; use ordered_sum (base/ordered_sum.h)")
    return out


def self_check():
    bad_double = "double s = 0;\n#pragma omp parallel for reduction(+ : s)\nfor (;;) s += 1;\n"
    bad_float_list = "long long n = 0;\nfloat a = 0, b = 0;\n#pragma omp parallel for reduction(+ : n, b)\n"
    bad_critical = "#pragma omp parallel\n{\n#pragma omp critical\n  s += t;\n}\n"
    bad_atomic = "#pragma omp atomic\n  s += t;\n"
    bad_continued = "double s = 0;\n#pragma omp parallel for \\\n    reduction(+ : s)\n"
    good_count = "long long n_m2l = 0, n_pairs = 0;\n#pragma omp parallel for reduction(+ : n_m2l, n_pairs)\n"
    good_size = "std::size_t hits{0};\n#pragma omp parallel for schedule(static) reduction(+ : hits)\n"
    good_max = "double m = 0;\n#pragma omp parallel for reduction(max : m)\n"
    good_simd = "double u0 = 0;\n#pragma omp simd reduction(+ : u0)\n"
    for name, code, expect in (("a double", bad_double, 1), ("a float in a list", bad_float_list, 1),
                               ("critical", bad_critical, 1), ("atomic", bad_atomic, 1),
                               ("a continued pragma", bad_continued, 1), ("integer counts", good_count, 0),
                               ("a size_t", good_size, 0), ("a max", good_max, 0), ("simd", good_simd, 0)):
        got = len(findings("self-check", code))
        if got != expect:
            sys.exit(f"self-check: {name}: {got} findings, expected {expect}")


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    self_check()
    out, files = [], 0
    for top in DIRS:
        for root, _, names in os.walk(os.path.join(repo, top)):
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    path = os.path.join(root, name)
                    with open(path, encoding="utf-8") as f:
                        out += findings(os.path.relpath(path, repo), f.read())
                    files += 1
    if files == 0:
        sys.exit(f"no sources found under {repo} ({', '.join(DIRS)})")
    for line in out:
        print(line)
    print(f"{files} files read, {len(out)} sums in thread order")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
