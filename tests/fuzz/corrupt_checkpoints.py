#!/usr/bin/env python3
"""The corrupted-checkpoint experiment: restarts from randomly damaged copies of a real
checkpoint (or run file) and counts how each ended.

    python3 tests/fuzz/corrupt_checkpoints.py [--exe build/vortexhit] [--cases 500]
        [--target checkpoint.h5|run.h5] [--seed 1] [--timeout 60] [--work DIR]

A run of inputs/quick.ini (32^3, both solvers) to t/T = 0.1 gives the checkpoint; its
restart to t/T = 0.15 from the intact files is the reference. Each case copies the run
folder, damages the target file once, restarts with a timeout and compares run.h5 with the
reference. The damage (in turn): 1 to 8 bytes XOR-ed with random values, one bit flipped, the
file truncated at a random length, a block of 512 B to 64 KiB zeroed at a random offset.

Allowed outcomes: exit 0 with results identical to the reference (the damage hit bytes that
do not matter), or exit 2 with one line naming the file. Anything else fails the experiment:
exit 0 with other results (silent), exit 1 (internal error), any other status, or a hang.
Prints a table of outcomes per kind of damage and the refusal messages by kind; exits 1 when
any case failed.
"""
import argparse
import collections
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ["bytes", "bit", "truncate", "zero block"]


def damage(path, kind, rng):
    data = bytearray(open(path, "rb").read())
    n = len(data)
    if kind == "bytes":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(n)] ^= rng.randint(1, 255)
    elif kind == "bit":
        data[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        data = data[: rng.randrange(n)]
    else:
        size = rng.choice([512, 4096, 65536])
        at = rng.randrange(max(1, n - size))
        data[at : at + size] = bytes(len(data[at : at + size]))
    open(path, "wb").write(bytes(data))


def records(run_h5):
    """Every series and spectrum of the solvers, as bytes (NaN == NaN, -0 != +0)."""
    out = {}
    with h5py.File(run_h5, "r") as f:
        for solver in ("spectral", "vortex"):
            for group in ("series", "spectra"):
                g = f.get(f"{solver}/{group}")
                for name in g or []:
                    out[f"{solver}/{group}/{name}"] = np.asarray(g[name]).tobytes()
    return out


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, (p.stdout + p.stderr).strip()
    except subprocess.TimeoutExpired:
        return None, "timed out"


def message_kind(text, target):
    """The refusal message without paths and numbers, to group them."""
    line = text.splitlines()[0] if text else ""
    line = line.replace("vortexhit: error: ", "")
    line = re.sub(r"\S*/" + re.escape(target), target, line)
    line = re.sub(r"\(xxh3-64 [0-9a-f]+, sealed [0-9a-f]+\)", "(…)", line)
    line = re.sub(r"(?<![A-Za-z_.])-?\d+(\.\d+)?(e[-+]?\d+)?", "N", line)
    return line[:140]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default=os.path.join(ROOT, "build", "vortexhit"))
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--target", default="checkpoint.h5", choices=["checkpoint.h5", "run.h5"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temporary one, removed)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="vh_corrupt_")
    os.makedirs(work, exist_ok=True)
    base, ref = os.path.join(work, "base"), os.path.join(work, "reference")
    deck = os.path.join(ROOT, "inputs", "quick.ini")
    for d in (base, ref):
        shutil.rmtree(d, ignore_errors=True)
    rc, out = run([a.exe, "run", deck, "--quiet", "--time.t_end_over_T=0.1", "--output.fields_at=",
                   "--output.dir=" + base], 600)
    if rc != 0:
        sys.exit(f"corrupt_checkpoints: the base run failed ({rc}): {out}")
    shutil.copytree(base, ref)
    restart = ["run", "--restart", None, "--quiet", "--time.t_end_over_T=0.15"]
    rc, out = run([a.exe] + [ref if x is None else x for x in restart], 600)
    if rc != 0:
        sys.exit(f"corrupt_checkpoints: the reference restart failed ({rc}): {out}")
    want = records(os.path.join(ref, "run.h5"))
    size = os.path.getsize(os.path.join(base, a.target))
    print(f"base: {deck} to t/T = 0.1 in {base}; {a.target} {size} bytes; reference restart to t/T = 0.15")

    rng = random.Random(a.seed)
    table = collections.defaultdict(collections.Counter)
    messages = collections.Counter()
    failures = []
    case_dir = os.path.join(work, "case")
    for i in range(a.cases):
        kind = KINDS[i % len(KINDS)]
        shutil.rmtree(case_dir, ignore_errors=True)
        shutil.copytree(base, case_dir)
        damage(os.path.join(case_dir, a.target), kind, rng)
        rc, out = run([a.exe] + [case_dir if x is None else x for x in restart], a.timeout)
        if rc == 0:
            outcome = "exit 0, identical" if records(os.path.join(case_dir, "run.h5")) == want else "exit 0, SILENTLY DIFFERENT"
        elif rc == 2:
            one_line = len(out.splitlines()) == 1 and a.target in out
            outcome = "exit 2" if one_line else "exit 2, NOT ONE LINE NAMING THE FILE"
            messages[message_kind(out, a.target)] += 1
        elif rc is None:
            outcome = "HANG"
        else:
            outcome = f"EXIT {rc}"
        table[kind][outcome] += 1
        if outcome not in ("exit 0, identical", "exit 2"):
            failures.append((i, kind, outcome, out[-300:]))
            shutil.copytree(case_dir, os.path.join(work, f"failed_{i}"))
    shutil.rmtree(case_dir, ignore_errors=True)

    outcomes = sorted({o for c in table.values() for o in c})
    print(f"\n{a.cases} damaged copies of {a.target} (seed {a.seed}, timeout {a.timeout:g} s)\n")
    print("| damage | cases | " + " | ".join(outcomes) + " |")
    print("|---|---|" + "---|" * len(outcomes))
    for kind in KINDS:
        c = table[kind]
        print(f"| {kind} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in outcomes) + " |")
    total = collections.Counter()
    for c in table.values():
        total.update(c)
    print(f"| all | {a.cases} | " + " | ".join(str(total[o]) for o in outcomes) + " |")
    print("\nrefusals (exit 2) by message:")
    for m, k in messages.most_common():
        print(f"  {k:4d}  {m}")
    for i, kind, outcome, out in failures:
        print(f"\nFAILED case {i} ({kind}): {outcome}\n{out}")
    if not a.work and not failures:
        shutil.rmtree(work, ignore_errors=True)
    elif failures:
        print(f"\nthe failed cases are in {work}/failed_*")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
