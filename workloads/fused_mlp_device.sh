#!/usr/bin/env bash
# Issue 41 on one GPU machine, in one go: the fused gate/up GEMM kernel's correctness, the
# benchmark (bench --sweep: the fused kernel beside cuBLAS, eager, compiled, max-autotune and
# --kernel triton), the sample trace and an eager trace of the same card, smoke captures, the GPU tests.
#
#   OUT=/tmp/out bash workloads/fused_mlp_device.sh
#
# Run from the repository root. $OUT gets env.txt, pytest_fused.txt, bench.md, capture.log,
# pytest_gpu.txt and samples.tar.gz (mlp_triton_fused.json.gz, mlp_eager.json.gz, the train
# capture). Each step has its own time limit, so one hang loses one step; the steps that matter
# most come first.
set -uo pipefail
OUT=$(realpath -m "${OUT:-out}")
REPO=$(pwd)
mkdir -p "$OUT/samples" "$OUT/smoke"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
# as device_run.sh: workloads/ is importable only as tracetui.workloads, through an editable install
installed() { python3 -c "import sys, tracetui.workloads as w; sys.exit(not w.__file__.startswith('$REPO/'))" 2>/dev/null; }
installed || python3 -m pip install -q --no-deps --no-build-isolation -e . && installed ||
    { echo "fused_mlp_device.sh: cannot install this checkout (pip install --no-deps -e . by hand)" >&2; exit 2; }
[[ -e tests/__init__.py ]] || touch tests/__init__.py

step() {  # step SECONDS LOG COMMAND...: run, tee to $OUT/LOG, report status
    local limit=$1 log=$2
    shift 2
    echo "### $*" | tee -a "$OUT/$log"
    timeout "$limit" "$@" 2>&1 | tee -a "$OUT/$log"
    echo "### exit ${PIPESTATUS[0]}: $*" | tee -a "$OUT/$log"
}
capture() {  # capture DIR ARGS...: tracetui capture in DIR, as the samples' README records it
    (cd "$OUT/$1" && shift && step 180 capture.log python3 -m tracetui capture "$@")
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
    python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.version.cuda)"
} 2>&1 | tee "$OUT/env.txt"

# 1. the kernel against float64, every shape and launch kind (the capture tests come later)
step 240 pytest_fused.txt python3 -m pytest -o addopts="" tests/workloads/test_fused_mlp_gpu.py -k "not capture" -q -rs \
    -p no:cacheprovider
# 2. the sample trace and, for the diff, eager on the same card
capture samples mlp --kernel triton-fused
capture samples mlp
capture samples mlp --kernel triton-fused --train
tar czf "$OUT/samples.tar.gz" -C "$OUT/samples" .  # before the rest: a timeout keeps the traces
ls -l "$OUT/samples" | tee -a "$OUT/capture.log"
# 3. the benchmark, one process on one card
step 300 bench.md python3 -m tracetui.workloads.bench --sweep
# 4. other variants must run (traces not kept), then the GPU tests of the captures and the GeGLU kernel
capture smoke mlp --kernel triton-fused --compile
capture smoke mlp --kernel triton-fused --cuda-graph
capture smoke mlp --kernel triton-fused --dtype fp16 --batch 3 --seq 37 --dim 72 --hidden 200
ls -l "$OUT/smoke" | tee -a "$OUT/capture.log"
step 240 pytest_gpu.txt python3 -m pytest -o addopts="" tests/workloads/test_fused_mlp_gpu.py tests/workloads/test_geglu_gpu.py \
    tests/workloads/test_capture_gpu.py -k "capture or geglu" -m gpu -q -rs -p no:cacheprovider
rm -rf "$OUT/samples" "$OUT/smoke"
