#!/usr/bin/env bash
# Issue 42's core counts on a machine of many cores (CPU only): build the scanner, make the inputs
# (the headline replicated to 1 GB and 8.66 GB, gzip level 1; the Llama trace with stacks and memory
# replicated to 1.11 GB, plain JSON), then `summary` cold on 1, 2, 4, 8 and 16 cores
# (benchmarks/bench_cores.py).
#
#   SIZES="1G" RUNS=3 benchmarks/floor_device.sh      # 1 GB of both shapes
#   SIZES="8G" ONLY_MAKE=1 benchmarks/floor_device.sh # 8.66 GB: its input first (one call) ...
#   SIZES="8G" RUNS=1 benchmarks/floor_device.sh      # ... then its runs (another)
#
# Needs the project's dependencies in $PYTHON (polars, msgspec, isal, rich, textual: `pip install -e .`)
# and the shared traces in $SHARED (default ../shared/traces). Inputs go to $WORK (default
# /tmp/floor_device), the results to $OUT/cores.txt where $OUT is set.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
SHARED=${SHARED:-../shared/traces}
WORK=${WORK:-/tmp/floor_device}
SIZES=${SIZES:-1G}
RUNS=${RUNS:-3}
CORES=${CORES:-1,2,4,8,16}
"$PYTHON" -c 'import polars, msgspec, isal, rich' 2>/dev/null || {
    echo "floor_device.sh: $PYTHON lacks the project's dependencies (pip install -e .)" >&2
    exit 2
}
ext=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
inc=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
cc -O3 -Wall -Wextra -shared -fPIC -I"$inc" tracetui/trace/_scan.c -o "tracetui/trace/_scan$ext"
mkdir -p "$WORK"
traces=()
for size in ${SIZES//,/ }; do
    case $size in
        8G) copies=96 ;;
        *) copies=12 ;;
    esac
    headline="$WORK/transformer_train_long_$size.json.gz"
    [ -e "$headline" ] || "$PYTHON" benchmarks/make_big_trace.py "$SHARED/transformer_train_long.json.gz" \
        "$headline" --copies "$copies"
    traces+=("$headline")
    if [ "$size" = 1G ]; then
        llama="$WORK/llama8_train_stack_memory_1G.json"
        [ -e "$llama" ] || "$PYTHON" benchmarks/make_big_trace.py "$SHARED/llama8_train_stack_memory.json.gz" \
            "$llama" --copies 7
        traces+=("$llama")
    fi
done
[ -z "${ONLY_MAKE:-}" ] || exit 0
export PYTHONPATH=$PWD
"$PYTHON" benchmarks/bench_cores.py "${traces[@]}" --cores "$CORES" --runs "$RUNS" | tee "${OUT:-$WORK}/cores.txt"
