#!/usr/bin/env bash
# Everything issue 3 needs from a GPU machine, in one go: environment, tests, benchmark, sample traces.
#
#   OUT=/tmp/out bash workloads/device_run.sh [all | tests bench samples memory smoke ddp fsdp ranks]...
#
# Run from the repository root. Logs land in $OUT (env.txt, pytest_*.txt, bench.md, capture.log) and
# the sample traces in $OUT/samples.tar.gz; copy them into sample_traces/ and record the commands
# and versions in sample_traces/README.md. Each step has its own time limit so one hang loses one step.
set -uo pipefail
OUT=$(realpath -m "${OUT:-out}")
WHAT=" ${*:-all} "
REPO=$(pwd)
mkdir -p "$OUT/samples" "$OUT/smoke"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
# workloads/ is importable only as tracetui.workloads, i.e. once this checkout is installed
# (pyproject's package-dir): install it in editable mode, offline (no dependencies, no build
# isolation: the GPU machine reaches no package index; needs setuptools >= 77 there).
installed() { python3 -c "import sys, tracetui.workloads as w; sys.exit(not w.__file__.startswith('$REPO/'))" 2>/dev/null; }
installed || python3 -m pip install -q --no-deps --no-build-isolation -e . && installed ||
    { echo "device_run.sh: cannot install this checkout (pip install --no-deps -e . by hand)" >&2; exit 2; }

step() {  # step SECONDS LOG COMMAND...: run, tee to $OUT/LOG, report status
    local limit=$1 log=$2
    shift 2
    echo "### $*" | tee -a "$OUT/$log"
    timeout "$limit" "$@" 2>&1 | tee -a "$OUT/$log"
    echo "### exit ${PIPESTATUS[0]}: $*" | tee -a "$OUT/$log"
}

want() { [[ $WHAT == *" all "* || $WHAT == *" $1 "* ]]; }

capture() {  # capture DIR ARGS...: tracetui capture in DIR, as the samples' README records it
    (cd "$OUT/$1" && shift && step 240 capture.log python3 -m tracetui capture "$@")
}

if want tests; then
    {
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
        python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.version.cuda)"
    } 2>&1 | tee "$OUT/env.txt"
    # Without tests/__init__.py, pytest names tests/workloads "workloads" and hides the real package.
    [[ -e tests/__init__.py ]] || touch tests/__init__.py
    step 300 pytest_gpu.txt python3 -m pytest -o addopts="" tests/workloads -m gpu -q -rs -p no:cacheprovider
    step 200 pytest_cpu.txt python3 -m pytest -o addopts="" tests/workloads -m "not gpu" -q -rs -p no:cacheprovider
fi
if want bench; then
    step 300 bench.md python3 -m tracetui.workloads.bench --sweep
fi
if want samples; then
    capture samples matmul-add
    capture samples linear
    capture samples linear --compile
    capture samples mlp
    capture samples mlp --compile
    capture samples mlp --kernel triton
    capture samples mlp --cuda-graph
    capture samples mlp --kernel triton --train
    tar czf "$OUT/samples.tar.gz" -C "$OUT/samples" .
    ls -l "$OUT/samples" | tee -a "$OUT/capture.log"
fi
if want memory; then  # issue 15: a training step with a clear memory peak, kept in $OUT/memory
    mkdir -p "$OUT/memory"
    capture memory transformer-block --train --memory --with-stack --steps 5 -o transformer_block_train_memory.json.gz
    capture memory transformer-block --train --memory --steps 5 --batch 64 -o transformer_block_train_memory_b64.json.gz
    ls -l "$OUT/memory" | tee -a "$OUT/capture.log"
fi
if want ddp; then  # issue 18: one trace per rank; gloo on one GPU, NCCL when there is a GPU per rank
    mkdir -p "$OUT/ddp"
    capture ddp ddp --ranks 4 --straggler 2 -o ddp_gloo_4ranks_straggler --backend gloo
    capture ddp ddp --ranks 2 -o ddp_gloo_2ranks --backend gloo
    if [[ $(nvidia-smi -L | wc -l) -ge 2 ]]; then
        capture ddp ddp --ranks 2 --straggler 1 -o ddp_nccl_2ranks_straggler --backend nccl
    fi
    step 300 pytest_ddp.txt python3 -m pytest -o addopts="" tests/workloads/test_capture_ddp.py -q -rs -p no:cacheprovider
    tar czf "$OUT/ddp.tar.gz" -C "$OUT/ddp" .
    ls -lR "$OUT/ddp" | tee -a "$OUT/capture.log"
    rm -rf "$OUT/ddp"
fi
checkranks() {  # checkranks DIR: every rank's trace against workloads/expect/distributed.toml
    local f
    for f in "$1"/*.pt.trace.json.gz; do
        step 120 capture.log python3 -m tracetui check "$f" --expect "$REPO/workloads/expect/distributed.toml"
    done
}
if want fsdp; then  # issue 17 on ONE GPU: FSDP2 with gloo, both ranks on GPU 0; the GPU tests of ddp and fsdp
    mkdir -p "$OUT/fsdp"
    capture fsdp fsdp --ranks 2 --straggler 1 --backend gloo -o fsdp_gloo_2ranks_straggler
    checkranks "$OUT/fsdp/fsdp_gloo_2ranks_straggler"
    tar czf "$OUT/fsdp.tar.gz" -C "$OUT/fsdp" .  # before the tests: a timeout keeps the traces
    ls -lR "$OUT/fsdp" | tee -a "$OUT/capture.log"
    rm -rf "$OUT/fsdp"
    step 400 pytest_fsdp.txt python3 -m pytest -o addopts="" tests/workloads/test_capture_fsdp.py tests/workloads/test_capture_ddp.py \
        tests/workloads/test_capture_ranks.py -q -rs -p no:cacheprovider
fi
if want ranks; then  # issue 17: NCCL with a GPU per rank (nvidia-h200-x2 or -x4); skipped with one GPU
    gpus=$(nvidia-smi -L | wc -l)
    if [[ $gpus -lt 2 ]]; then
        echo "### ranks: NCCL needs a GPU per rank; this machine has $gpus GPU(s): skipped" | tee -a "$OUT/capture.log"
    else
        n=$((gpus >= 4 ? 4 : 2))
        mkdir -p "$OUT/ranks"
        for w in ddp fsdp; do
            capture ranks "$w" --ranks "$n" --backend nccl -o "${w}_nccl_${n}ranks"
            capture ranks "$w" --ranks "$n" --backend nccl --straggler $((n - 1)) -o "${w}_nccl_${n}ranks_straggler"
            checkranks "$OUT/ranks/${w}_nccl_${n}ranks"
            checkranks "$OUT/ranks/${w}_nccl_${n}ranks_straggler"
        done
        if [[ $n -eq 4 ]]; then
            capture ranks fsdp --ranks 2 --backend nccl --straggler 1 -o fsdp_nccl_2ranks_straggler
            checkranks "$OUT/ranks/fsdp_nccl_2ranks_straggler"
        fi
        tar czf "$OUT/ranks.tar.gz" -C "$OUT/ranks" .  # before the tests: a timeout keeps the traces
        ls -lR "$OUT/ranks" | tee -a "$OUT/capture.log"
        rm -rf "$OUT/ranks"
        step 400 pytest_ranks.txt python3 -m pytest -o addopts="" tests/workloads/test_capture_fsdp.py tests/workloads/test_capture_ddp.py \
            -m gpu -q -rs -p no:cacheprovider
    fi
fi
if want smoke; then  # other variants: must run, traces not kept
    capture smoke mlp --kernel triton --compile
    capture smoke mlp --kernel triton --cuda-graph --train
    capture smoke mlp --compile --train
    capture smoke matmul-add --cuda-graph --train
    capture smoke linear --memory --with-stack --dtype fp32
    ls -l "$OUT/smoke" | tee -a "$OUT/capture.log"
    rm -rf "$OUT/smoke"
fi
rm -rf "$OUT/samples"
