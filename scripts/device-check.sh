#!/usr/bin/env bash
# GPU tests and benchmarks from binaries built here and carried to the GPU machine
# (docs/design.md, "The GPU machine"). Writes logs and CSV rows under $OUT (default ./device-out).
#
#   scripts/build-gpu.sh [SET]           # here: build with CUDA for sm_90, fill .gpu/ with a set
#                                        # (fmm, spectral, vortex: what the modes below run)
#   device run, carry [".gpu"]:  export LD_LIBRARY_PATH=$PWD/.gpu; scripts/device-check.sh [MODE]
#                                        # (set all: carry [".gpu.tar.xz"], unpacked here)
# MODE: tests | bench | all (tests and bench) | vortex (GPU vs CPU vortex solver at 32^3, quick.ini
# at 32^3 on the GPU) | vstep (the GPU-resident vortex solver: test_vortex_gpu, test_blobs_gpu,
# vortex_step_bench at 128^3 and 256^3, the memory of 512^3, a 128^3 run to t/T = 1 restarted on the
# CPU) | study (parametric study at 64^3) | sc09 (the first steps of sc09_256.ini)
# | sanitize [TOOLS] [PARTS] (compute-sanitizer memcheck, racecheck and synccheck over every GPU
# test, in units that fit a call; racecheck takes GpuSolver's steps from a small case: see
# below) | memory (the memory estimate against what GPU runs use) | mpi (the spectral solver on
# 2 ranks sharing the GPU: test_spectral_mpi and spectral_bench on 1 and 2 ranks; the GPU
# tests of test_vortex_mpi, test_fmm_mpi and test_spectral_mpi on 2, 3 and 4 ranks sharing it)
# | gpus (one rank per GPU on every GPU of the machine: test_spectral_mpi on 2 … G ranks through NCCL and
# MPI, spectral_bench on 1, 2, 4 … G GPUs, the memory check of 1024^3, the sc09 case at 512^3
# with the spectral solver; see below) | vgpus (the vortex solver one rank per GPU: its ten-step
# equality, strong and weak scaling, sc09 at 128^3 and 512^3; VGPUS_STEPS picks, see below).
# Each mode runs what of it was carried: tests and bench with the fmm or the spectral set,
# sanitize with fmm, spectral or vortex, the vortex modes and memory with vortex, mpi, gpus and
# vgpus with mpi (gpus: vortexhit too).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-device-out}
mkdir -p "$OUT"
what=${1:-all}
# A set too large to carry as it is travels packed (build-gpu.sh): unpack it.
if [ -f .gpu.tar.xz ] && [ ! -d .gpu ]; then mkdir .gpu && tar -xJf .gpu.tar.xz -C .gpu; fi
export LD_LIBRARY_PATH=$PWD/.gpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
status=0
# The programs were built elsewhere: the reference data are the carried tree's
# (validation/reference_data.h reads VH_DATA_DIR before the path compiled in).
export VH_DATA_DIR=$PWD/validation/data

if [ "$what" = tests ] || [ "$what" = all ]; then
  # Every carried GoogleTest binary; GPU tests run here instead of skipping.
  for t in .gpu/test_* .gpu/*_test; do
    [ -x "$t" ] || continue
    echo "== $t" | tee -a "$OUT/tests.log"
    "$t" --gtest_brief=1 >>"$OUT/tests.log" 2>&1 || { status=1; echo "FAILED: $t" | tee -a "$OUT/tests.log"; }
  done
  tail -n 3 "$OUT/tests.log"
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  # The benchmarks of bench/RESULTS.md, each with its table in bench.log and CSV rows in $OUT.
  run_bench() {  # name, then the command
    local name=$1; shift
    echo "== $name: $*" | tee -a "$OUT/bench.log"
    "$@" >"$OUT/$name.out" 2>&1 || status=1
    cat "$OUT/$name.out" >>"$OUT/bench.log"
    sed -n '/^date,commit/,$p' "$OUT/$name.out" >"$OUT/$name.csv"
  }
  [ -x .gpu/spectral_bench ] && run_bench spectral .gpu/spectral_bench --device gpu --n 128,256,512 --dealias 3/2,2/3,none --csv
  [ -x .gpu/p2p_gpu_bench ] && run_bench p2p .gpu/p2p_gpu_bench --device gpu --log2n 18,21,24 --precision fp32,fp64
  [ -x .gpu/fmm_bench ] && run_bench fmm .gpu/fmm_bench --device gpu --turbulent --min-log2n 15 --max-log2n 24 \
    --tolerance 1e-4 --repeat 1 --ref-max-log2n 21 --csv
  # Issue 15: the resident evaluator (GpuEvaluator) at 2^21 and 2^24 (FMM_RESIDENT_MAX=27 adds
  # 2^27), theta 0.6, p 10, ncrit of the 1e-4 row, every overlap mode, same_positions off and on.
  [ -x .gpu/fmm_bench ] && run_bench fmm_resident .gpu/fmm_bench --device gpu --resident --turbulent \
    --theta 0.6 --p 10 --tolerance 1e-4 --min-log2n 21 --max-log2n "${FMM_RESIDENT_MAX:-24}" --repeat 3 \
    --ref-max-log2n 24 --csv
  [ -x .gpu/blobs_bench ] && run_bench blobs .gpu/blobs_bench --csv "$OUT/blobs_rows.csv"
  tail -n 20 "$OUT/bench.log"
fi
vh=.gpu/vortexhit
timed() {  # label, then the command: runs it, then prints "label: wall s"
  local label=$1 t0 t1 rc; shift
  t0=$(date +%s.%N); "$@"; rc=$?; t1=$(date +%s.%N)
  echo "$label: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
  return $rc
}
if [ "$what" = vortex ]; then
  # Issue 6, item 6: 5 AB2 steps at 32^3, GPU vs CPU vortex solver, compared by vortexhit compare.
  base="--case.solver=vortex --domain.n=32 --flow.k_p=3 --flow.Re_lambda=30 --time.dt=0.02 --time.t_end=0.1
        --time.output_interval=0.02 --output.fields_at= --output.overwrite=true --output.checkpoint_minutes=0
        --fmm.tolerance=1e-6 --quiet"
  for d in cpu gpu; do
    timed "vortex 32^3 5 steps on $d" $vh run $base --device=$d --output.dir="$OUT/vortex32_$d" \
      2>&1 | tee -a "$OUT/vortex.log" || status=1
  done
  $vh compare "$OUT/vortex32_cpu" "$OUT/vortex32_gpu" --solver vortex --K-tol 1e-5 --epsilon-tol 1e-5 \
    2>&1 | tee -a "$OUT/vortex.log" || status=1
  # quick.ini at 32^3 (both solvers) on the GPU, compared at t/T = 1.
  timed "quick 32^3 both on gpu" $vh run inputs/quick.ini --domain.n=32 --device=gpu \
    --output.dir="$OUT/quick32" --output.fields_at= --quiet 2>&1 | tee -a "$OUT/vortex.log" || status=1
  $vh compare "$OUT/quick32" --at 0.5,1 2>&1 | tee -a "$OUT/vortex.log"
  tail -n 3 "$OUT/quick32/log.txt" >>"$OUT/vortex.log" 2>/dev/null
fi
if [ "$what" = sanitize ]; then
  # compute-sanitizer over every GPU test, one unit (a binary and a gtest filter) at a time:
  #   device-check.sh sanitize [TOOL[,TOOL...]] [PART[,PART...]]
  # TOOL: memcheck, racecheck, synccheck (default all three); PART: the units below (default
  # all whose binary was carried: the fmm set has p2p … field, the spectral set spectral, the
  # vortex set blobs, vortex, vortex_steps and vortex_steps_small; a gtest filter matches
  # parameterised tests under their prefix, Cases/Name.Test: hence */EvaluatorGpu.*). A unit
  # with a fourth field runs by default only under the tools it names: vortex_steps (FiveSteps
  # at 32^3 with p 14, RestartContinues at 16^3) does not finish under racecheck in 480 s, so
  # racecheck covers GpuSolver's steps with vortex_steps_small (SanitizerSizedSteps: 8^3, p 4,
  # three steps with a reinitialisation) and runs vortex_steps only when PARTS names it.
  # The call ends within SANITIZE_BUDGET_S seconds (default 540: inside the device tool's 10
  # minutes): each unit gets at most SANITIZE_UNIT_S (default 300) and no more than what is left
  # of the budget, and none starts with less than 20 s left; units left out are listed as "not
  # run" for the next call. One line per unit in $OUT/sanitize_summary.txt, the tool's output in
  # $OUT/sanitize.log.
  tools=${2:-memcheck,racecheck,synccheck}
  parts=${3:-all}
  units=(  # part|binary|gtest filter[|tools when PARTS is all]
    "p2p|fmm_gpu_test|*"
    "far|test_fmm_gpu|FmmGpu.*FarField*:FmmGpu.*AutoSettings*"
    "periodic|test_fmm_gpu|FmmGpu.*Periodic*"
    "free|test_fmm_gpu|FmmGpu.*FreeSpace*:FmmGpu.SeparateTargets:FmmGpu.Repeatable:FmmGpuLists.*"
    "evaluator|test_fmm_gpu|EvaluatorGpuStages.*:EvaluatorGpuReuse.*:EvaluatorGpuInputs.*"
    "evaluator_cases|test_fmm_gpu|*/EvaluatorGpu.*"
    "traverse|test_traverse_gpu|*-*Timing*"
    "traverse_timing|test_traverse_gpu|*Timing*"
    "blobs|test_blobs_gpu|*"
    "field|test_initial_field|*Gpu*"
    "spectral|test_spectral_gpu|*"
    "vortex|test_vortex_gpu|*InitialParticles*:*Reinitialisation*"
    "vortex_steps|test_vortex_gpu|*-*InitialParticles*:*Reinitialisation*:*SanitizerSized*|memcheck,synccheck"
    "vortex_steps_small|test_vortex_gpu|VortexGpu.SanitizerSizedSteps"
  )
  t_start=$(date +%s)
  for tool in ${tools//,/ }; do
    for u in "${units[@]}"; do
      IFS='|' read -r part bin filter unit_tools <<<"$u"
      [ "$parts" = all ] || [[ ",$parts," == *",$part,"* ]] || continue
      [ -x ".gpu/$bin" ] || continue
      if [ "$parts" = all ] && [ -n "$unit_tools" ] && [[ ",$unit_tools," != *",$tool,"* ]]; then
        echo "$tool $part: not run (by default only under $unit_tools; name it in PARTS to run it)" |
          tee -a "$OUT/sanitize_summary.txt"
        continue
      fi
      label="$tool $part ($bin --gtest_filter=$filter)"
      left=$(( ${SANITIZE_BUDGET_S:-540} - ($(date +%s) - t_start) ))
      if (( left < 20 )); then
        echo "$label: not run (call budget spent)" | tee -a "$OUT/sanitize_summary.txt"
        continue
      fi
      limit=$(( left < ${SANITIZE_UNIT_S:-300} ? left : ${SANITIZE_UNIT_S:-300} ))
      echo "== $label" >>"$OUT/sanitize.log"
      t0=$(date +%s)
      timeout -k 5 "$limit" compute-sanitizer --tool "$tool" --error-exitcode 1 --print-limit 50 \
        ".gpu/$bin" --gtest_brief=1 "--gtest_filter=$filter" >"$OUT/sanitize_unit.log" 2>&1
      rc=$?
      cat "$OUT/sanitize_unit.log" >>"$OUT/sanitize.log"
      verdict=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize_unit.log" | tail -n 1 | sed "s/^=* *//")
      tests=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/sanitize_unit.log" | tr '\n' ' ')
      case $rc in
        0) result="ok: ${verdict:-no summary}" ;;
        124|137)
          if (( limit < ${SANITIZE_UNIT_S:-300} )); then result="TIMEOUT after $limit s (the call's budget ran out): run it in a call of its own"
          else result="TIMEOUT after $limit s: split the filter"; fi
          status=1 ;;
        *) result="FAILED (exit $rc): ${verdict:-see sanitize.log}"; status=1 ;;
      esac
      echo "$label: $result; ${tests:-no gtest summary, }$(( $(date +%s) - t0 )) s" | tee -a "$OUT/sanitize_summary.txt"
    done
  done
  rm -f "$OUT/sanitize_unit.log"
fi
if [ "$what" = memory ]; then
  # src/app/memory_estimate.h against real runs on the GPU: the dry run's estimate, then a few
  # steps with nvidia-smi sampling the memory in use every 100 ms (its largest value, which
  # includes the CUDA context, about 0.5 GiB) and the log's peak RSS against the host estimate.
  for c in "spectral 256" "spectral 512" "vortex 128" "both 256"; do
    set -- $c
    args="inputs/quick.ini --device=gpu --case.solver=$1 --domain.n=$2 --time.t_end_over_T=0.005
          --time.output_interval_over_T=0.005 --output.fields_at= --output.overwrite=true --output.dir=$OUT/mem_$1_$2"
    # shellcheck disable=SC2086
    $vh run $args --dry-run | grep '^memory' | sed "s/^/$1 $2 dry run: /" | tee -a "$OUT/memory.log"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$OUT/mem_smi.txt" &
    smi=$!
    # shellcheck disable=SC2086
    $vh run $args --quiet || status=1
    kill $smi
    echo "$1 $2: GPU in use at most $(sort -n "$OUT/mem_smi.txt" | tail -n 1) MiB (nvidia-smi);" \
      "$(grep 'peak RSS' "$OUT/mem_$1_$2/log.txt")" | tee -a "$OUT/memory.log"
  done
fi
if [ "$what" = mpi ]; then
  # Issue 17: the GPU solver on 2 ranks sharing this GPU against one rank (test_spectral_mpi's
  # MpiGpu case: fused passes and cuFFT lines, 3/2 and 2/3, 20 steps, <= 1e-12), through MPI as
  # the library offers it (CUDA-aware when it says so) and staged through host memory; then the
  # time per step at 256^3 and 512^3 on 1 and 2 ranks (an overhead figure: one GPU). 512^3 with
  # the 3/2 rule on 2 ranks needs about 30 GB of GPU memory per rank.
  np2="mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x VH_MPI_CUDA_AWARE -np 2"
  for aware in "" 0; do
    label=${aware:+staged}; label=${label:-as offered}
    echo "== 2 ranks, MPI $label: test_spectral_mpi" | tee -a "$OUT/mpi.log"
    VH_MPI_CUDA_AWARE=$aware $np2 .gpu/test_spectral_mpi >>"$OUT/mpi.log" 2>&1 || { status=1; echo "FAILED" | tee -a "$OUT/mpi.log"; }
    grep -E "^\[[0-9]+ ranks .*slab: |^\[mpi\]|FAILED|PASSED" "$OUT/mpi.log" | tail -n 8
  done
  # The vortex solver and the slab transforms on 2, 3 and 4 ranks sharing this GPU against one
  # GPU (VortexMpiGpu.*, FmmMpiGpu.*, MpiGpu.SlabFftOnTheGpuEqualsTheCpus: the R-rank GPU paths
  # that one GPU can check; one rank per GPU is `gpus` and `vgpus`).
  for r in 2 3 4; do
    for t in test_vortex_mpi test_fmm_mpi test_spectral_mpi; do
      [ -x .gpu/$t ] || continue
      echo "== $r ranks sharing the GPU: $t" | tee -a "$OUT/mpi_shared.log"
      mpirun --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH -x VH_DATA_DIR -np $r .gpu/$t \
        --gtest_filter='*Gpu*' >>"$OUT/mpi_shared.log" 2>&1 || { status=1; echo "FAILED" | tee -a "$OUT/mpi_shared.log"; }
    done
  done
  grep -E "^\[(vortex mpi gpu|gpu slab fft)\]|FAILED|PASSED" "$OUT/mpi_shared.log" | tail -n 40
  .gpu/spectral_bench --device gpu --n 256,512 --dealias 3/2,2/3 --csv 2>&1 | tee "$OUT/mpi_bench_1.out" || status=1
  for aware in "" 0; do
    VH_MPI_CUDA_AWARE=$aware $np2 .gpu/spectral_bench --device gpu --n 256,512 --dealias 3/2,2/3 --csv 2>&1 |
      tee "$OUT/mpi_bench_2${aware:+_staged}.out" || status=1
  done
fi
if [ "$what" = gpus ]; then
  # Issue 24: the spectral solver on the GPUs of one machine, one rank per GPU (mpirun -np R,
  # the node-local rank picks the GPU). GPUS_N (default "256,512") and GPUS_DEALIAS (default
  # "2/3,3/2") pick the spectral_bench cases, GPUS_BIG (default 1024: 2/3 only, on G GPUs) the
  # largest, GPUS_SC09_T (default 0.1) how far the sc09 case at 512^3 runs on G GPUs.
  G=$(nvidia-smi -L | wc -l)
  mpi="mpirun --allow-run-as-root --bind-to none -x LD_LIBRARY_PATH -x VH_DATA_DIR -x NCCL_NVLS_ENABLE -x VH_PEER_COPIES"
  export NCCL_NVLS_ENABLE=0  # never NVLink multicast on a shared host (KINDS.md of the lender)
  export VH_PEER_COPIES=1
  ranks_list=""; for r in 2 4 8; do (( r <= G )) && ranks_list="$ranks_list $r"; done
  for r in $ranks_list; do
    for peer in 1 0; do
      echo "== $r ranks, one per GPU: test_spectral_mpi (MPI and NCCL; VH_PEER_COPIES=$peer)" | tee -a "$OUT/gpus.log"
      VH_PEER_COPIES=$peer $mpi -np "$r" .gpu/test_spectral_mpi --gtest_filter="${GPUS_TESTS:-MpiGpu.*:Mpi.RanksAreThere}" \
        >>"$OUT/gpus.log" 2>&1 || { status=1; echo "FAILED" | tee -a "$OUT/gpus.log"; }
      grep -E "^\[[0-9]+ ranks .*slab: |^\[planned pieces\]|FAILED|PASSED" "$OUT/gpus.log" | tail -n 12
    done
  done
  bench="--device gpu --n ${GPUS_N:-256,512} --dealias ${GPUS_DEALIAS:-2/3,3/2} --steps 10 --warmup 3 --csv"
  # shellcheck disable=SC2086
  .gpu/spectral_bench $bench >"$OUT/gpus_bench_1.out" 2>&1 || status=1
  for r in $ranks_list; do
    # NCCL alone and with peer copies, each without the exchanges overlapped and with; the staged
    # MPI path only at 2 ranks and the smaller size: it is the old baseline.
    for peer in 1 0; do
      for ov in off on; do
        VH_PEER_COPIES=$peer $mpi -np "$r" .gpu/spectral_bench $bench --comm nccl --overlap $ov \
          >"$OUT/gpus_bench_${r}_nccl_peer${peer}_overlap_${ov}.out" 2>&1 || status=1
      done
    done
    if (( r == 2 )); then
      $mpi -np "$r" .gpu/spectral_bench --device gpu --n 256 --dealias 2/3 --steps 5 --warmup 1 --csv --comm mpi \
        >"$OUT/gpus_bench_${r}_mpi.out" 2>&1 || status=1
    fi
  done
  cat "$OUT"/gpus_bench_*.out | grep -vE "^date,commit|^20[0-9][0-9]-" | tee -a "$OUT/gpus.log"
  cat "$OUT"/gpus_bench_*.out | grep -E "^20[0-9][0-9]-" >"$OUT/gpus_bench.csv"
  if [ -n "${GPUS_BIG:-1024}" ] && (( G >= 4 )); then
    big=${GPUS_BIG:-1024}
    echo "== ${big}^3 2/3: the memory check on 1 rank, then $G ranks" | tee -a "$OUT/gpus.log"
    $vh run inputs/sc09_256.ini --case.solver=spectral --domain.n="$big" --spectral.dealias=2/3 --dry-run 2>&1 |
      tail -n 2 | tee -a "$OUT/gpus.log"
    $mpi -np "$G" $vh run inputs/sc09_256.ini --case.solver=spectral --domain.n="$big" --spectral.dealias=2/3 \
      --dry-run 2>&1 | grep -E "^memory|needs|allowed" | tee -a "$OUT/gpus.log"
    $mpi -np "$G" .gpu/spectral_bench --device gpu --n "$big" --dealias 2/3 --steps 5 --warmup 2 --csv \
      >"$OUT/gpus_bench_big.out" 2>&1 || status=1
    grep -vE "^date,commit" "$OUT/gpus_bench_big.out" | tee -a "$OUT/gpus.log"
  fi
  # The sc09 case at 512^3, spectral solver, on every GPU, as far as GPUS_SC09_T.
  r="$OUT/gpus_sc09_512"
  timed "sc09 at 512^3, spectral, $G GPUs, to t/T = ${GPUS_SC09_T:-0.1}" $mpi -np "$G" $vh run inputs/sc09_256.ini \
    --case.solver=spectral --domain.n=512 --time.t_end_over_T="${GPUS_SC09_T:-0.1}" --output.fields_at= \
    --output.dir="$r" --output.overwrite=true --quiet 2>&1 | tail -n 5 | tee -a "$OUT/gpus.log" || status=1
  grep -E "^time |steps|comm|transport" "$r/log.txt" | tail -n 12 | tee -a "$OUT/gpus.log"
fi
if [ "$what" = vgpus ]; then
  # Issue 25: the vortex solver on the GPUs of one machine, one rank per GPU (vortex/solver_gpu.h
  # on R ranks). VGPUS_STEPS (default 1) picks what runs: "tests" the ten-step equality against
  # one GPU (test_vortex_mpi's VortexMpiGpu cases) and the shared upward pass against the whole
  # one (test_fmm_mpi's FmmMpiGpu case) on 2 and 4 ranks, "strong" vortex_step_bench at
  # 256^3 (the deck's settings) on 1, 2 and 4 GPUs, "weak" 2^24 particles per GPU (256^3 on 1,
  # N = 322 on 2, N = 406 on 4), "sc09" the sc09 flow at 128^3 with both solvers on 2 GPUs to
  # t/T = VGPUS_SC09_T (default 10) and its comparison, "big" the 512^3 case's memory check on
  # one rank and its step time on every GPU; space-separated.
  G=$(nvidia-smi -L | wc -l)
  mpi="mpirun --allow-run-as-root --bind-to none -x LD_LIBRARY_PATH -x VH_DATA_DIR -x NCCL_NVLS_ENABLE -x VH_PEER_COPIES"
  export NCCL_NVLS_ENABLE=0  # never NVLink multicast on a shared host (KINDS.md of the lender)
  export VH_PEER_COPIES=1
  ranks_list=""; for r in 2 4 8; do (( r <= G )) && ranks_list="$ranks_list $r"; done
  # The benches take the FMM of inputs/sc09_256.ini (its [fmm] p, theta and tolerance), as the
  # issue's floors and the one-GPU figures of bench/RESULTS.md do.
  deck_fmm=$(awk -F' *= *' '/^\[/ { s = $0 } s == "[fmm]" && /^(p|theta|tolerance) *=/ { printf "--%s %s ", $1, $2 }' \
    inputs/sc09_256.ini)
  echo "vortex_step_bench FMM (inputs/sc09_256.ini): $deck_fmm" | tee -a "$OUT/vgpus.log"
  vb="$deck_fmm--steps ${VGPUS_BENCH_STEPS:-5} --warmup 2 --csv"
  for part in ${VGPUS_STEPS:-tests}; do
    case "$part" in
      tests)
        for r in $ranks_list; do
          echo "== $r ranks, one per GPU: test_vortex_mpi VortexMpiGpu.*" | tee -a "$OUT/vgpus.log"
          $mpi -np "$r" .gpu/test_vortex_mpi --gtest_filter='VortexMpiGpu.*' >>"$OUT/vgpus.log" 2>&1 ||
            { status=1; echo "FAILED" | tee -a "$OUT/vgpus.log"; }
          $mpi -np "$r" .gpu/test_fmm_mpi --gtest_filter='FmmMpiGpu.*' >>"$OUT/vgpus.log" 2>&1 ||
            { status=1; echo "FAILED" | tee -a "$OUT/vgpus.log"; }
          grep -E "^\[vortex mpi gpu\]|^GPU evaluate_|FAILED|PASSED" "$OUT/vgpus.log" | tail -n 7
        done ;;
      strong)
        for r in 1 $ranks_list; do
          # shellcheck disable=SC2086
          $mpi -np "$r" .gpu/vortex_step_bench --n 256 $vb >"$OUT/vgpus_strong_$r.out" 2>&1 || status=1
          sed -n '/^per step/,/^$/p' "$OUT/vgpus_strong_$r.out" | tee -a "$OUT/vgpus.log"
        done ;;
      weak)
        for rn in 1:256 2:322 4:406; do
          r=${rn%%:*}; n=${rn##*:}; (( r <= G )) || continue
          # shellcheck disable=SC2086
          $mpi -np "$r" .gpu/vortex_step_bench --n "$n" $vb >"$OUT/vgpus_weak_$r.out" 2>&1 || status=1
          sed -n '/^per step/,/^$/p' "$OUT/vgpus_weak_$r.out" | tee -a "$OUT/vgpus.log"
        done ;;
      sc09)
        d="$OUT/vgpus_sc09_128"
        timed "sc09 at 128^3, both solvers, 2 GPUs, to t/T = ${VGPUS_SC09_T:-10}" $mpi -np 2 $vh run inputs/sc09_256.ini \
          --domain.n=128 --time.t_end_over_T="${VGPUS_SC09_T:-10}" --output.fields_at= --output.dir="$d" \
          --output.overwrite=true --quiet 2>&1 | tail -n 5 | tee -a "$OUT/vgpus.log" || status=1
        grep -E "^time |transport|ranks" "$d/log.txt" | tail -n 6 | tee -a "$OUT/vgpus.log"
        $vh compare "$d" --at 1,5,10 2>&1 | tee -a "$OUT/vgpus.log" ;;
      big)
        echo "== 512^3 vortex: the memory check on 1 rank, then $G ranks" | tee -a "$OUT/vgpus.log"
        $vh run inputs/sc09_256.ini --domain.n=512 --dry-run 2>&1 | tail -n 2 | tee -a "$OUT/vgpus.log"
        $mpi -np "$G" $vh run inputs/sc09_256.ini --domain.n=512 --dry-run 2>&1 | grep -E "^memory|needs|allowed|GPU" |
          tee -a "$OUT/vgpus.log"
        # shellcheck disable=SC2086
        $mpi -np "$G" .gpu/vortex_step_bench --n 512 $deck_fmm--steps 3 --warmup 1 --csv \
          >"$OUT/vgpus_big.out" 2>&1 || status=1
        sed -n '/^per step/,$p' "$OUT/vgpus_big.out" | tee -a "$OUT/vgpus.log" ;;
      *) echo "device-check.sh vgpus: unknown part '$part' (allowed: tests strong weak sc09 big)" >&2; status=2 ;;
    esac
  done
  cat "$OUT"/vgpus_*.out 2>/dev/null | grep -E "^20[0-9][0-9]-" >"$OUT/vgpus_bench.csv"
fi
if [ "$what" = vstep ]; then
  # Issue 15, the vortex/ part: the GPU-resident solver against the CPU one (test_vortex_gpu), the
  # blob sums from device pointers (test_blobs_gpu), both under compute-sanitizer too, then
  # vortex_step_bench (tables in vstep.log, CSV rows in vstep*.csv): sc09 physics at 128^3 and
  # 256^3 (fmm.tolerance 1e-5, the deck's), at 128^3 with refine 2, and 512^3 (2^27 particles: does
  # it fit, and its step time). Then vortexhit: the sc09 physics at 128^3 with both solvers, and a
  # GPU checkpoint continued on the CPU.
  for t in .gpu/test_vortex_gpu .gpu/test_blobs_gpu; do
    echo "== $t" | tee -a "$OUT/vstep.log"
    "$t" >>"$OUT/vstep.log" 2>&1 || { status=1; echo "FAILED: $t" | tee -a "$OUT/vstep.log"; }
    grep -E "relative L2|monitors|PASSED|FAILED|SKIPPED" "$OUT/vstep.log" | tail -n 4
  done
  # memcheck and racecheck on the new kernels (the small cases: 16^3 and 8^3 refine 2)
  for tool in memcheck racecheck; do
    echo "== $tool test_vortex_gpu, test_blobs_gpu DevicePointers" | tee -a "$OUT/vstep.log"
    compute-sanitizer --tool $tool --error-exitcode 1 .gpu/test_vortex_gpu \
      --gtest_filter='*InitialParticles*:*Reinitialisation*' >>"$OUT/vstep_sanitize.log" 2>&1 || status=1
    compute-sanitizer --tool $tool --error-exitcode 1 .gpu/test_blobs_gpu --gtest_filter='*DevicePointers*' \
      >>"$OUT/vstep_sanitize.log" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/vstep_sanitize.log" | tail -n 2 | tee -a "$OUT/vstep.log"
  done
  bench_step() {  # name, then the arguments
    local name=$1; shift
    echo "== vortex_step_bench $*" | tee -a "$OUT/vstep.log"
    .gpu/vortex_step_bench "$@" --csv >"$OUT/$name.out" 2>&1 || status=1
    sed -n '/^per step/,/^date,commit/p' "$OUT/$name.out" | sed '$d' | tee -a "$OUT/vstep.log"
    sed -n '/^date,commit/,$p' "$OUT/$name.out" >"$OUT/$name.csv"
  }
  bench_step vstep --n 128,256 --steps 5 --warmup 2
  bench_step vstep_refine2 --n 128 --refine 2 --steps 3 --warmup 1
  bench_step vstep_512 --n 512 --steps 2 --warmup 1
  # The sc09 physics at 128^3 (Re_lambda 50), both solvers, to t/T = ${VSTEP_T:-1} (VSTEP_T=10: the
  # whole case); the log's phase table splits the time.
  r="$OUT/vstep_run128"
  timed "sc09 128^3 Re_lambda 50, both solvers to t/T = ${VSTEP_T:-1} on the GPU" $vh run inputs/sc09_256.ini \
    --domain.n=128 --flow.Re_lambda=50 --time.t_end_over_T=${VSTEP_T:-1} --output.fields_at= --output.dir="$r" \
    --output.overwrite=true --quiet 2>&1 | tee -a "$OUT/vstep.log" || status=1
  grep -E "^time |^memory|steps" "$r/log.txt" | tail -n 16 | tee -a "$OUT/vstep.log"
  # A GPU checkpoint continues on the CPU (the same state format): vortex only, 32^3.
  r="$OUT/vstep_restart32"
  $vh run inputs/quick.ini --case.solver=vortex --domain.n=32 --time.t_end_over_T=0.1 --output.fields_at= \
    --output.dir="$r" --output.overwrite=true --device=gpu --quiet >>"$OUT/vstep.log" 2>&1 || status=1
  timed "32^3 GPU checkpoint continued on the CPU to t/T = 0.15" $vh run --restart "$r" --device=cpu \
    --time.t_end_over_T=0.15 --quiet 2>&1 | tail -n 3 | tee -a "$OUT/vstep.log" || status=1
  grep -E "^restart|vortex " "$r/log.txt" | tail -n 4 | tee -a "$OUT/vstep.log"
fi
if [ "$what" = study ]; then
  OUT=$OUT bench/vortex/param_study.sh $vh 64 0.5 gpu 2>&1 | tee "$OUT/study64.log" || status=1
fi
if [ "$what" = sc09 ]; then
  # The first part of the SC09 case: both solvers at 256^3 from one field, to t/T = ${SC09_T:-0.03}.
  timed "sc09_256 to t/T = ${SC09_T:-0.03}" $vh run inputs/sc09_256.ini \
    --time.t_end_over_T=${SC09_T:-0.03} --time.output_interval_over_T=0.01 --output.fields_at= \
    --output.dir="$OUT/sc09" --output.overwrite=true --output.checkpoint_minutes=0 2>&1 | tail -n 40 | tee "$OUT/sc09.log"
  $vh compare "$OUT/sc09" 2>&1 | tee -a "$OUT/sc09.log"
fi
exit $status
