#!/usr/bin/env python3
"""What the blob sums' cut-off does to one reinitialisation, in one dimension.

The reinitialisation takes the blob sums b_i = sum_j a_j K(x_i - x_j) at the lattice points
x_i = i h from particles x_j = j h + d_j moved off the lattice (|d_j| <= dmax h), divides their
transform by a lattice symbol S(k) and keeps |k| <= N/3 (vortex/remesh.h; the cube filter is
this 1-D cut in each direction). The reference is the whole Gaussian, K = g, S = its symbol
(vortex/rbf.h, symbol_factors). A kernel is separable, K(x) = prod_d K1(x_d), so to first order
a 3-D relative error is the sum of the three directions' 1-D errors.

Kernels compared (sigma = h as the decks have it; R = cut-off in sigma):
  cut R       g where |x| <= R sigma, divided by the whole Gaussian's symbol (the solver today)
  cut R, own  the same sums divided by the cut kernel's own lattice symbol
  taper R, m  g (1 - (x / R sigma)^2)^m, smooth at the cut, divided by its own lattice symbol

Printed per kernel, over `--trials` random fields and offsets:
  pairs      lattice points a particle reaches, (points inside the cut)^3 in 3-D
  drain      1 - E'/E_ref of a smooth field (spectrum k^4 exp(-2 (k/4)^2)): the energy one
             reinitialisation takes (or adds), per direction
  band err   relative L2 error of the kept modes against the reference (smooth field)
  edge err   the same for a white field on the modes N/6 < |k| <= N/3 (the last shells)

Run: python3 bench/vortex/cutoff_study.py [--n 64] [--dmax 0.1] [--trials 200]
"""
import argparse

import numpy as np


def gaussian(x, sigma):
    return np.exp(-0.5 * (x / sigma) ** 2)


def make_kernel(kind, R, m, sigma):
    if kind == "full":
        return lambda x: gaussian(x, sigma)
    if kind in ("cut", "cut-own"):
        return lambda x: np.where(np.abs(x) <= R * sigma, gaussian(x, sigma), 0.0)
    if kind == "taper":
        def k(x):
            t = np.clip(1.0 - (x / (R * sigma)) ** 2, 0.0, None)
            return gaussian(x, sigma) * t ** m
        return k
    raise ValueError(kind)


def lattice_symbol(K, n, h):
    """sum_m K(m h) e^{-i k m h} over the lattice's offsets and their images (real: K even)."""
    m = np.arange(-4 * n, 4 * n + 1)
    k = np.fft.fftfreq(n, d=1.0 / n)
    return np.array([np.sum(K(m * h) * np.cos(kk * m * h)) for kk in k])


def blob_sums(K, a, x, n, h, reach):
    """b_i = sum_j a_j K(i h - x_j), periodic (images within `reach` lattice lengths)."""
    i = np.arange(n)[:, None] * h
    b = np.zeros(n)
    L = n * h
    for img in range(-reach, reach + 1):
        b += (K(i - x[None, :] + img * L) * a[None, :]).sum(axis=1)
    return b


def reinit(K, S, a, x, n, h):
    ahat = np.fft.fft(blob_sums(K, a, x, n, h, 1)) / S
    k = np.abs(np.fft.fftfreq(n, d=1.0 / n))
    ahat[k > n / 3] = 0.0
    return ahat


def random_field(n, rng, smooth):
    k = np.abs(np.fft.fftfreq(n, d=1.0 / n))
    amp = k ** 2 * np.exp(-((k / 4.0) ** 2)) if smooth else np.ones(n)
    c = amp * (rng.standard_normal(n) + 1j * rng.standard_normal(n))
    return np.real(np.fft.ifft(c)) * n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--dmax", type=float, default=0.1)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    n, h = args.n, 2 * np.pi / args.n
    sigma = h
    kinds = [("cut", 7, 0), ("cut", 6, 0), ("cut", 5.5, 0), ("cut", 5, 0), ("cut", 4, 0), ("cut-own", 5, 0),
             ("taper", 6, 2), ("taper", 5, 2), ("taper", 4, 2), ("taper", 4, 4)]
    full = make_kernel("full", 0, 0, sigma)
    S_full = lattice_symbol(full, n, h)
    k = np.abs(np.fft.fftfreq(n, d=1.0 / n))
    band, edge = k <= n / 3, (k > n / 6) & (k <= n / 3)
    print(f"n = {n}, sigma = h, particles moved by up to {args.dmax} h, {args.trials} trials, seed {args.seed}")
    print(f"{'kernel':>16} {'pairs':>6} {'in 3-D':>7} {'drain':>10} {'band err':>10} {'edge err':>10} "
          f"{'min S/S(0)':>10}")
    for kind, R, m in kinds:
        K = make_kernel(kind, R, m, sigma)
        S = S_full if kind == "cut" else lattice_symbol(K, n, h)
        rng = np.random.default_rng(args.seed)
        e_var = e_ref = d_band = n_band = d_edge = n_edge = 0.0
        for _ in range(args.trials):
            x = np.arange(n) * h + rng.uniform(-args.dmax, args.dmax, n) * h
            for smooth in (True, False):
                a = random_field(n, rng, smooth)
                ref = reinit(full, S_full, a, x, n, h)
                var = reinit(K, S, a, x, n, h)
                if smooth:
                    e_var += np.sum(np.abs(var[band]) ** 2)
                    e_ref += np.sum(np.abs(ref[band]) ** 2)
                    d_band += np.sum(np.abs(var[band] - ref[band]) ** 2)
                    n_band += np.sum(np.abs(ref[band]) ** 2)
                else:
                    d_edge += np.sum(np.abs(var[edge] - ref[edge]) ** 2)
                    n_edge += np.sum(np.abs(ref[edge]) ** 2)
        pts = int(np.sum(K(np.arange(-n, n) * h + 0.3 * h) > 0))  # points inside at a generic offset
        name = f"{kind} {R:g}" + (f", m {m}" if kind == "taper" else "")
        print(f"{name:>16} {pts:>6} {pts ** 3:>7} {1 - e_var / e_ref:>10.2e} {np.sqrt(d_band / n_band):>10.2e} "
              f"{np.sqrt(d_edge / n_edge):>10.2e} {np.min(S[band]) / S[0]:>10.3f}")


if __name__ == "__main__":
    main()
