#!/usr/bin/env python3
"""Shared-memory bank conflicts of the float M2L's table loads (fmm/far_gpu.cu, m2l_kernel), and a
search for the row paddings of RowBases that avoid them.

The model follows the kernel's access pattern exactly: lane c of a warp owns output (l, m) =
the c-th of the m >= 0 storage (and c + 32, c + 64 in later rounds); at source degree j with more
than 32 outputs l <= p - j taking part every lane reads T[row(l + j) + m + k] for k = -j..j;
with fewer, G = 2, 4, 8 lanes share an output, lane group t0 taking k = -j + t0, step G. A load
of 8-byte values is served 16 lanes at a time, one wavefront per distinct address that shares a
bank (address mod 16) with another. Prints the wavefronts of one translation for the
triangular rows (row n centred at n^2 + n), the lower bound (one per half-warp with work) and
the best paddings found (cumulative per row, as m2l_row_bases takes them).

  bench/fmm/m2l_bank_conflicts.py P [RESTARTS] [SEED]     e.g. 10 40 23 (about a minute)

ncu on the kernel at 2^21 (p = 10, triangular rows) counted 173 conflict wavefronts per
translation; this model predicts 312 - 141 = 171.
"""
import random
import sys


def outputs(p):
    lm = []
    for l in range(p + 1):
        for m in range(l + 1):
            lm.append((l, m))
    return lm


def wavefronts(p, base, lower_bound=False):
    lm = outputs(p)
    cidx = lambda l, m: l * (l + 1) // 2 + m
    total = 0

    def load(addrs):  # addrs: (lane, address) of one load instruction
        nonlocal total
        for half in (0, 1):
            a = {x for lane, x in addrs if lane // 16 == half}
            if not a:
                continue
            if lower_bound:
                total += 1
                continue
            count = {}
            for x in a:
                count[x % 16] = count.get(x % 16, 0) + 1
            total += max(count.values())

    for j in range(p + 1):
        nact = cidx(p - j + 1, 0)
        if nact > 32:
            for q in range((nact + 31) // 32):
                for k in range(-j, j + 1):
                    load([(lane, base[lm[lane + 32 * q][0] + j] + lm[lane + 32 * q][1] + k)
                          for lane in range(32) if lane + 32 * q < nact])
        else:
            gl = 0 if nact > 16 else 1 if nact > 8 else 2 if nact > 4 else 3
            g, ap = 1 << gl, 32 >> gl
            for it in range((2 * j + 1 + g - 1) // g):
                addrs = []
                for lane in range(32):
                    o, t0 = lane & (ap - 1), lane >> (5 - gl)
                    k = -j + t0 + it * g
                    if o < nact and k <= j:
                        addrs.append((lane, base[lm[o][0] + j] + lm[o][1] + k))
                load(addrs)
    return total


def bases(p, pad):
    b, acc = [], 0
    for n in range(p + 1):
        acc += pad[n]
        b.append(n * n + n + acc)
    return b


def main():
    p = int(sys.argv[1])
    restarts = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    random.seed(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    zero = [0] * (p + 1)
    print(f"p = {p}: triangular {wavefronts(p, bases(p, zero))}, "
          f"lower bound {wavefronts(p, bases(p, zero), True)} wavefronts per translation")
    best, best_pad = wavefronts(p, bases(p, zero)), zero
    for r in range(restarts):
        pad = [0] + [random.randrange(16) for _ in range(p)] if r else zero[:]
        cost = wavefronts(p, bases(p, pad))
        for _ in range(3):  # coordinate descent
            for n in range(1, p + 1):
                for d in range(16):
                    trial = pad[:n] + [d] + pad[n + 1:]
                    c = wavefronts(p, bases(p, trial))
                    if c < cost:
                        cost, pad = c, trial
        if cost < best:
            best, best_pad = cost, pad
            print(f"restart {r}: {cost} wavefronts, paddings {pad}")
    print(f"best: {best} wavefronts, paddings {best_pad}, rows centred at {bases(p, best_pad)}")


if __name__ == "__main__":
    main()
