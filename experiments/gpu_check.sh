#!/usr/bin/env bash
# Issue 42's GPU checks in one run, most important first, each under its own time limit (within DEADLINE
# seconds in all), every result written as it comes: the CUDA tests, the float-bit codes on the GPU against
# NumPy's (equal codes, seconds both ways), dpsgd-audit's GPU grid in WORKERS processes sharing the GPU (stages
# pipelined), with its GPU utilization and the workers' occupancy (target >= 50% utilization), the CUDA-graph
# critic fit against the eager one, device-choice (step costs and --device auto/cpu/cuda audits), the host and
# GPU kernel seconds by stage of the widest parameter release (experiments.dimension_profile) and of the epsilon
# stage's audits (experiments.epsilon_profile), the host-device synchronisation points of the widest release's
# audits on the device, against the CPU's count of them (experiments.sync_count), gpu-throughput (against a
# measured copy and matmul roofline), training-throughput (runs per second on both devices beside the trainer's
# device-cost model), and the GPU grid in one process profiled by stage, with what time is left.
#
#   bash experiments/gpu_check.sh            # on a GPU machine; results in $OUT (or ./gpu-check-out)
#   SMALL=1 bash experiments/gpu_check.sh    # dry run on a CPU: every size shrunk, --device cpu
#
# Wheels missing on the GPU image (dp-accounting, dm-tree, opacus for one CUDA test) are installed from $WHEELS
# when that folder exists (WHEELS=.whl with .whl carried, as the device tool's README says). On an H200 of the
# lending workplace, 2026-11-28, the steps then run took cuda-tests 22, float-bits 22, dpsgd-gpu 57 (stages one
# after another), gpu-throughput 25, critic-graph 13, device-choice 189, training-throughput 22, dimension host 29
# and the one-process profile 94 s (about 480 s in all with the start); the pages in docs/benchmarks/ come from
# that run.
# Results: $OUT/log.txt (everything printed) and $OUT/results.tar.gz (every table, page and log), re-packed
# after each step so that a run cut short still returns what finished.
set -u
START=$(date +%s)
DEADLINE=${DEADLINE:-480}
OUT=${OUT:-$PWD/gpu-check-out}
WORK=${WORK:-/tmp/gpu-check}
WHEELS=${WHEELS:-.whl}
SMALL=${SMALL:-0}
WORKERS=${WORKERS:-4}
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg
PY=python3

if [ "$SMALL" = 1 ]; then
  DEVICE=cpu; QUICK=--quick; PAGES=$WORK/pages; GRID=""; GRAPH_ARGS="--device cpu --samples 4000 --max-steps 100"
  BITS_ARGS="--device cpu --rows 2000 --columns 577"; HOST_ARGS="--device cpu --features 4 --runs 400"
  EPS_ARGS="--device cpu --runs 400 --release loss"; SYNC_ARGS="--device cpu --features 4 --runs 400 --device-routes"
else
  DEVICE=cuda; QUICK=""; PAGES=docs/benchmarks; GRID="--grid gpu"; GRAPH_ARGS="--device cuda"; BITS_ARGS="--device cuda"
  HOST_ARGS="--device cuda --features 256 --runs 2000"
  EPS_ARGS="--device cuda --device-routes"; SYNC_ARGS="--device cuda --features 256 --runs 400"
fi
mkdir -p "$PAGES"

left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
pack() {
  mkdir -p "$WORK/pages"
  [ "$SMALL" = 1 ] || cp -f docs/benchmarks/gpu-throughput.md docs/benchmarks/device-choice.md \
      docs/benchmarks/dpsgd-gpu.md docs/benchmarks/training-throughput.md "$WORK/pages/" 2>/dev/null
  tar -czf "$OUT/results.tar.gz.tmp" -C "$WORK" . && mv -f "$OUT/results.tar.gz.tmp" "$OUT/results.tar.gz"
}
step() {  # step NAME MAX_SECONDS COMMAND...: run under min(MAX, what is left), log its exit and seconds
  local name=$1 max=$2; shift 2
  local limit; limit=$(left); [ "$limit" -gt "$max" ] && limit=$max
  if [ "$limit" -lt 15 ]; then echo "=== $name: skipped, $limit s left"; echo "$name skipped" >>"$WORK/steps.txt"; return; fi
  echo "=== $name: start (limit $limit s, $(( $(date +%s) - START )) s in)"
  local t0; t0=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$limit" "$@"
  local rc=$?
  echo "=== $name: exit $rc after $(( $(date +%s) - t0 )) s"
  echo "$name exit=$rc seconds=$(( $(date +%s) - t0 )) limit=$limit" >>"$WORK/steps.txt"
  pack
}

echo "=== machine"
date -Is; uname -m; nproc; free -g | head -2
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem,utilization.gpu --format=csv 2>&1 | tee "$WORK/nvidia-smi.txt"
if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1 && ! $PY -c "import dp_accounting" 2>/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
$PY -c "import torch, numpy, scipy, sklearn, dp_accounting, matplotlib, tqdm, threadpoolctl; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
echo "$(date -Is)" >"$WORK/started.txt"
pack

# 1. The CUDA tests (pytest -m cuda: skipped without a GPU).
CUDA_TEST_FILES=$(grep -l "mark.cuda" tests/test_*.py)
step cuda-tests 120 $PY -m pytest -q -m cuda -p no:randomly -p no:cacheprovider $CUDA_TEST_FILES -rs \
  --junitxml="$WORK/cuda-tests.xml"

# 2. The float-bit codes on the device against NumPy's at one input's event runs of the widest release (10,000 x 8,257).
step float-bits 60 bash -c "$PY -m experiments.float_bits_check $BITS_ARGS > '$WORK/float-bits.json'"
cat "$WORK/float-bits.json" 2>/dev/null

# 3. dpsgd-audit's GPU grid in $WORKERS processes sharing the GPU (the same tables as one process), its stages
#    written as they finish, GPU utilization sampled.
step dpsgd-gpu 240 $PY -m audit.cli.main experiment dpsgd-audit $QUICK $GRID --device $DEVICE --workers $WORKERS \
  --out "$WORK/dpsgd-gpu" --page "$PAGES/dpsgd-gpu.md"

# 4. The CUDA-graph critic fit against the eager one (one seed; and the CPU's).
step critic-graph 40 bash -c "$PY -m experiments.critic_graph_check $GRAPH_ARGS > '$WORK/critic-graph.json'"
cat "$WORK/critic-graph.json" 2>/dev/null | $PY -c "import json,sys; d=json.load(sys.stdin); print({k: (d[k]['estimates'], round(d[k]['steps_per_second']), d[k]['steps']) for k in ('cpu','eager','graph')}, d['max_graph_minus_eager_in_stderr'])" 2>/dev/null

# 5. choose_device's constants measured, and audits with --device auto/cpu/cuda.
step device-choice 200 $PY -m audit.cli.main experiment device-choice $QUICK --device $DEVICE \
  --out "$WORK/device-choice" --page "$PAGES/device-choice.md"

# 6. Host and GPU time by stage (torch.profiler: each stage's torch operators, host work and GPU kernel seconds)
#    of the GPU grid's widest parameter release (d = 8,257) at 2,000 runs per audit; with what time is left.
#    On cuda the trainer's chunks are the GPU's own; the profiles' --gpu-chunks gives a CPU run the same ones.
step dpsgd-host 120 bash -c "$PY -m experiments.dimension_profile $HOST_ARGS > '$WORK/dpsgd-host.txt'"
grep -v USDT "$WORK/dpsgd-host.txt" 2>/dev/null

# 7. The same of the GPU grid's epsilon stage (both canaries' audits at target ε = 1, 10,000 runs per database;
#    5% GPU utilization in the grid): experiments.epsilon_profile.
step epsilon-host 90 bash -c "$PY -m experiments.epsilon_profile $EPS_ARGS > '$WORK/epsilon-host.txt'"
grep -v USDT "$WORK/epsilon-host.txt" 2>/dev/null

# 8. The host-device syncs of the widest release's audits (d = 8,257, 400 runs per audit) counted by caller on the
#    device: the places a CUDA run syncs, against the CPU's count, and the bytes copied host→device by caller
#    (experiments.sync_count: about 20 s on the CPU).
step sync-count 30 bash -c "$PY -m experiments.sync_count --stage dimension $SYNC_ARGS --top 20 > '$WORK/sync-count.txt'"
cat "$WORK/sync-count.txt" 2>/dev/null

# 9. gpu-throughput against the measured copy and matmul ceilings (the page records --device cuda).
step gpu-throughput 75 $PY -m audit.cli.main experiment gpu-throughput $QUICK --device $DEVICE \
  --out "$WORK/gpu-throughput" --page "$PAGES/gpu-throughput.md"

# 10. Training runs per second on both devices, beside the device-cost model --device auto chooses the trainer by.
step training-throughput 90 $PY -m audit.cli.main experiment training-throughput $QUICK --device $DEVICE \
  --out "$WORK/training-throughput" --page "$PAGES/training-throughput.md"

# 11. The GPU grid in one process, profiled by stage (the sampler reads the main thread), with what time is left.
step dpsgd-gpu-profile 200 $PY -m experiments.stage_profile dpsgd-audit $QUICK $GRID --device $DEVICE \
  --out "$WORK/dpsgd-gpu-one-process"

echo "=== summary ($(( $(date +%s) - START )) s)"
cat "$WORK/steps.txt"
for f in "$WORK"/dpsgd-gpu/summary.md "$WORK"/gpu-throughput/summary.md "$WORK"/device-choice/summary.md \
    "$WORK"/training-throughput/summary.md; do
  [ -f "$f" ] && sed -n '/## What it shows/,/## Files/p' "$f"
done
pack
