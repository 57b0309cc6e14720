#!/usr/bin/env bash
# Fuzzes the deck parser and the checkpoint and run-file readers with libFuzzer (tests/fuzz/):
#
#   scripts/fuzz.sh SECONDS [HARNESS ...]   each harness (deck, checkpoint, run_file; default
#                                           all) for SECONDS, one after another, at nice 5
#                                           (VH_FUZZ_NICE)
#   scripts/fuzz.sh --seeds                 rewrites the checkpoint and run_file seed corpora
#                                           from a run of the current build (after a format
#                                           change), then exits
#
# Builds build-fuzz/ with Clang 14 (Debian's clang-14, libclang-rt-14-dev with libFuzzer,
# libomp-14-dev; installed when missing) and ASan + UBSan. Each harness grows a working corpus
# in build-fuzz/fuzz/<harness>/corpus from tests/fuzz/<harness>/corpus (and inputs/ for the
# deck); a crash, leak, hang (> 10 s) or out-of-memory input lands in
# build-fuzz/fuzz/<harness>/artifacts/. Prints executions and findings per harness; exits 1
# when any harness found something: fix it and add the input to
# tests/fuzz/<harness>/regressions/, which ctest replays (test_fuzz_<harness>).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/fuzz.sh SECONDS [deck|checkpoint|run_file ...] | --seeds" >&2; exit 2; }
[ $# -ge 1 ] || usage

# Clang 14 with libFuzzer and its OpenMP, besides what scripts/setup.sh installs anyway.
export VH_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev libomp-14-dev"

if [ "$1" = --seeds ]; then
  VH_BUILD_DIR=build-seeds VH_CMAKE_ARGS="-DVH_ENABLE_CUDA=OFF" VH_BUILD_TARGETS=vortexhit scripts/setup.sh
  tmp=$(mktemp -d)
  # 8³, both solvers, a few steps: small seeds (about 100 kB) that still hold every dataset,
  # with the AB2 history (reinit_every 100) and without (reinit_every 1 from the blob field,
  # which restarts the history with an Euler step; from the points it is remeshed and kept).
  base="--domain.n=8 --flow.k_p=2 --flow.Re_lambda=20 --case.solver=both --device=cpu --output.fields_at=
        --time.output_interval_over_T=0.05 --quiet"
  # shellcheck disable=SC2086
  build-seeds/vortexhit run $base --time.t_end_over_T=0.1 --vortex.reinit_every=100 --output.dir="$tmp/ab2"
  # shellcheck disable=SC2086
  build-seeds/vortexhit run $base --time.t_end_over_T=0.05 --vortex.reinit_every=1 --vortex.reinit_from=blobs \
    --output.dir="$tmp/reinit"
  cp "$tmp/ab2/checkpoint.h5" tests/fuzz/checkpoint/corpus/both_8_ab2.h5
  cp "$tmp/reinit/checkpoint.h5" tests/fuzz/checkpoint/corpus/both_8_reinit.h5
  cp "$tmp/ab2/run.h5" tests/fuzz/run_file/corpus/both_8.h5
  rm -rf "$tmp"
  echo "fuzz: seeds rewritten in tests/fuzz/{checkpoint,run_file}/corpus"
  exit 0
fi

seconds=$1; shift
[[ "$seconds" =~ ^[0-9]+$ ]] || usage
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(deck checkpoint run_file)
targets=()
for h in "${harnesses[@]}"; do
  case "$h" in deck|checkpoint|run_file) targets+=("fuzz_$h") ;; *) usage ;; esac
done

CC=clang-14 CXX=clang++-14 VH_BUILD_DIR=build-fuzz VH_CMAKE_ARGS="-DVH_ENABLE_CUDA=OFF -DVH_FUZZ=ON" \
  VH_BUILD_TARGETS="${targets[*]}" scripts/setup.sh

# As for the sanitized tests (scripts/test.sh --sanitize): HDF5 handles the NULL malloc returns
# for the absurd sizes a crafted file asks for (so must ASan), and its own small leaks on error
# paths are suppressed (tests/lsan_suppressions.txt). -malloc_limit_mb lifts libFuzzer's own
# limit on one allocation (it would report those requests before ASan could refuse them);
# -rss_limit_mb still catches memory actually used.
export ASAN_OPTIONS=allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$PWD/tests/lsan_suppressions.txt
found=0
summary=()
for h in "${harnesses[@]}"; do
  work=build-fuzz/fuzz/$h
  mkdir -p "$work/corpus" "$work/artifacts"
  seeds=(tests/fuzz/"$h"/corpus)
  [ -d tests/fuzz/"$h"/regressions ] && seeds+=(tests/fuzz/"$h"/regressions)
  [ "$h" = deck ] && seeds+=(inputs)
  before=$(find "$work/artifacts" -type f | wc -l)
  touch "$work/log.txt.start"
  echo "== fuzz_$h for $seconds s (log: $work/log.txt)"
  # One fuzzing process at a time, restarted after a finding until SECONDS are spent, so one
  # finding does not end the campaign (libFuzzer's -fork mode does the same, at a tenth of the
  # speed here); -timeout: an input that takes 10 s is a hang; -rss_limit_mb: one that needs
  # 4 GB is a finding.
  : >"$work/log.txt"
  t_start=$(date +%s)
  deadline=$(( t_start + seconds ))
  while left=$(( deadline - $(date +%s) )); (( left > 0 )); do
    from=$(( $(stat -c %s "$work/log.txt") + 1 ))
    nice -n "${VH_FUZZ_NICE:-5}" build-fuzz/tests/fuzz/fuzz_"$h" "$work/corpus" "${seeds[@]}" -max_total_time="$left" \
      -timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=1048576 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" >>"$work/log.txt" 2>&1 && rc=0 || rc=$?
    # A failure before libFuzzer has read the whole corpus in (its INITED line) is a seed's or a
    # regression input's: fuzzing again would fail on it again.
    # (grep -c, not -q: an early exit of grep fails tail with SIGPIPE, and the pipeline with it)
    if [ "$rc" -ne 0 ] && [ "$(tail -c +"$from" "$work/log.txt" | grep -c INITED || true)" -eq 0 ]; then
      echo "fuzz_$h fails on a seed or regression input: see $work/log.txt"; break
    fi
  done
  spent=$(( $(date +%s) - t_start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | awk '{ s += $1 } END { print s + 0 }')
  new=$(( $(find "$work/artifacts" -type f | wc -l) - before ))
  restarts=$(grep -c INITED "$work/log.txt" || true)
  line="fuzz_$h: $execs executions in $spent s ($restarts start(s)), $new new finding(s), corpus $(find "$work/corpus" -type f | wc -l) inputs"
  if [ "$new" -gt 0 ]; then
    found=1
    line+=" — see $work/artifacts/ and $work/triage.txt"
    # Where each finding is: rerun its input and keep the report's summary and the first
    # frame outside the sanitizers and libFuzzer (our code, or a library such as libhdf5).
    for a in $(find "$work/artifacts" -type f -newer "$work/log.txt.start"); do
      report=$(timeout 120 build-fuzz/tests/fuzz/fuzz_"$h" -timeout=10 -malloc_limit_mb=1048576 "$a" 2>&1 || true)
      # (|| true: a pipe that finds nothing, or that head closes, must not end the script)
      where=$(grep -E "^ +#[0-9]+ " <<<"$report" | grep -vE "fuzzer::|__interceptor|__asan|__sanitizer|libc\.so|libc_start|_start |sysdeps|LLVMFuzzerTestOneInput|malloc|free " |
              sed -n '1{s/^ *#[0-9]* 0x[0-9a-f]* in //; s/ (BuildId.*//; p}' | cut -c1-110 || true)
      what=$(grep -m 1 -E "SUMMARY: |ALARM|runtime error|^fuzz_[a-z_]+: " <<<"$report" | sed -E 's/ \(.*BuildId[^)]*\)//' | cut -c1-110 || true)
      echo "$(basename "$a"): ${what:-reproduces no failure alone} at ${where:-?}" | tee -a "$work/triage.txt"
    done
  fi
  summary+=("$line")
  echo "$line"
done
printf '%s\n' "== summary" "${summary[@]}"
exit $found
