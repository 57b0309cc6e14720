#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs a deck.
#   scripts/run.sh [DECK] [--section.key=value ...]      (default deck: inputs/quick.ini)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
deck=inputs/quick.ini
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then deck=$1; shift; fi
exec build/vortexhit run "$deck" "$@"
