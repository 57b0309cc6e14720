#!/usr/bin/env bash
# Quick start: installs what is missing, builds, runs a deck, then makes the paper figures
# of the run into <run dir>/figures/ (postprocess/figures.py) and prints their paths.
#   scripts/run.sh [DECK] [--section.key=value ...]      (default deck: inputs/quick.ini,
#                                                         whose run folder is runs/quick)
# Exit status: the run's when it fails; otherwise the figures' (0, or 2 for unreadable files).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
deck=inputs/quick.ini
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then deck=$1; shift; fi

# The value of deck key `section.key`: the command line wins over the deck (as in vortexhit).
deck_value() {
  local key=$1 section=${1%%.*} name=${1#*.} value="" i
  local args=("${@:2}")
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
      --"$key"=*) value=${args[i]#--"$key"=} ;;
      --"$key") value=${args[i + 1]:-} ;;
    esac
  done
  if [ -z "$value" ] && [ -f "$deck" ]; then
    value=$(awk -v s="$section" -v k="$name" '
      { sub(/#.*/, ""); gsub(/^[ \t]+|[ \t\r]+$/, "") }
      /^\[.*\]$/ { cur = substr($0, 2, length($0) - 2); gsub(/^[ \t]+|[ \t]+$/, "", cur); next }
      cur == s && index($0, "=") { key = substr($0, 1, index($0, "=") - 1); gsub(/[ \t]+$/, "", key)
        if (key == k) { v = substr($0, index($0, "=") + 1); gsub(/^[ \t]+/, "", v); print v; exit } }' "$deck")
  fi
  printf '%s' "$value"
}

status=0
build/vortexhit run "$deck" "$@" || status=$?
[ "$status" -eq 0 ] || exit "$status"

# The run folder as the program chose it: output.dir, else runs/<case.name> (src/app/config.cpp).
run_dir=$(deck_value output.dir "$@")
if [ -z "$run_dir" ]; then
  name=$(deck_value case.name "$@")
  run_dir=runs/${name:-quick}
fi
if [ ! -f "$run_dir/run.h5" ]; then
  echo "run.sh: no $run_dir/run.h5 after the run; make the figures with:" >&2
  echo "  python3 postprocess/figures.py RUN_DIR --out RUN_DIR/figures" >&2
  exit 1
fi
echo "figures of $run_dir:"
python3 postprocess/figures.py "$run_dir" --out "$run_dir/figures"
