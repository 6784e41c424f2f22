#!/usr/bin/env bash
# Interleaved benchmark rounds: minimod vs MXNet 1.9.1 vs PyTorch vs the hand-written NumPy
# steps (bench_numpy.py: training steps of mlp, lenet and lstm_fused), one process per peer
# and workload.
#
#   bash benchmarks/run_all.sh [ROUNDS] [OUT.jsonl]      (defaults: 5, benchmarks/results/raw.jsonl)
#   python3 benchmarks/summarize.py benchmarks/results/raw.jsonl > benchmarks/results/results.md
#
# Each round runs every workload once per peer. By default (LOCKSTEP=1) a workload's peers run
# as concurrent processes that take turns window by window (lockstep.py; see benchutil.py), so
# their ratios compare the same seconds of this machine, whose speed swings by about 2x for
# minutes at a time. LOCKSTEP=0 runs the peers one after the other instead, as whole runs
# taken up to minutes apart. Either way the peers' order rotates from round to round, and
# before each workload (LOCKSTEP=0: each run) it waits until the machine has been quiet
# (< 0.25 cores for 2 s, at most 120 s).
# Never run two of these (or anything else heavy) at once: the machine has 2 cores and every
# run uses both.
#
# Environment: MINIMOD_PY (python3), MXNET_PY (/tmp/mxenv/bin/python),
# TORCH_PY (/tmp/ptenv/bin/python); a peer whose interpreter is missing is skipped.
# BENCH_WINDOW, BENCH_WARMUP, BENCH_QUIET_WINDOWS, BENCH_MAX_S, BENCH_THREADS go through to
# benchutil.py (shorten them for a smoke test); WORKLOADS (e.g. "mlp:128:module lenet:64:module")
# picks workloads; RUN_TIMEOUT (300 s) bounds one run (lockstep: one peer's start-up or one
# turn); LOCKSTEP (1) picks the mode above; WAIT_QUIET_MAX (120 s) bounds the wait
# for a quiet machine before each run.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROUNDS="${1:-5}"
OUT="${2:-$HERE/results/raw.jsonl}"
mkdir -p "$(dirname "$OUT")"
LOG="${OUT%.jsonl}.log"

MINIMOD_PY="${MINIMOD_PY:-python3}"
MXNET_PY="${MXNET_PY:-/tmp/mxenv/bin/python}"
TORCH_PY="${TORCH_PY:-/tmp/ptenv/bin/python}"
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
LOCKSTEP="${LOCKSTEP:-1}"
WORKLOADS="${WORKLOADS:-mlp:128:module mlp:32:module mlp:128:fit lenet:64:module lstm:32:module lstm_fused:32:module sdnet:128:module w2v_nce:256:module lstm_nce:32:module mlp:128:infer lenet:64:infer}"

have() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }

peer_cmd() {  # peer -> interpreter and script
    case "$1" in
        minimod) echo "$MINIMOD_PY $HERE/bench_minimod.py" ;;
        mxnet) echo "$MXNET_PY $HERE/bench_mxnet.py" ;;
        torch) echo "$TORCH_PY $HERE/bench_torch.py" ;;
        numpy) echo "$MINIMOD_PY $HERE/bench_numpy.py" ;;
    esac
}

peer_ok() {
    case "$1" in
        minimod) have "$MINIMOD_PY" ;;
        mxnet) have "$MXNET_PY" ;;
        torch) have "$TORCH_PY" ;;
        numpy) have "$MINIMOD_PY" ;;
    esac
}

wait_quiet() { python3 "$HERE/benchutil.py" wait-quiet 0.25 2 "${WAIT_QUIET_MAX:-120}" 2>>"$LOG"; }

echo "# $(date -Is) run_all.sh $ROUNDS rounds -> $OUT" | tee -a "$LOG" >&2

# Once: minimod and MXNet must build the same graphs (compared as parsed JSON).
if peer_ok minimod && peer_ok mxnet; then
    for net in mlp lenet lstm lstm_fused sdnet w2v_nce lstm_nce; do  # sdnet: its block
        a="$(mktemp)"; b="$(mktemp)"
        $(peer_cmd minimod) --net "$net" --dump-symbol >"$a" 2>>"$LOG"
        $(peer_cmd mxnet) --net "$net" --dump-symbol >"$b" 2>>"$LOG"
        if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$a" "$b" 2>>"$LOG"; then
            echo "symbol check $net: identical graph" | tee -a "$LOG" >&2
        else
            echo "symbol check $net: minimod and MXNet graphs DIFFER" | tee -a "$LOG" >&2
        fi
        rm -f "$a" "$b"
    done
fi

for ((r = 1; r <= ROUNDS; r++)); do
    for w in $WORKLOADS; do
        IFS=: read -r net batch mode <<<"$w"
        peers=(minimod mxnet torch numpy)
        k=$(((r - 1) % 4))
        peers=("${peers[@]:k}" "${peers[@]:0:k}")
        runnable=()
        for peer in "${peers[@]}"; do
            if [ "$peer" = torch ] && [ "$mode" = fit ]; then continue; fi
            if [ "$peer" = numpy ] && { [ "$mode" != module ] || [ "$net" = lstm ] \
                || [ "$net" = sdnet ] || [ "$net" = w2v_nce ] || [ "$net" = lstm_nce ]; }; then
                continue
            fi
            if peer_ok "$peer"; then runnable+=("$peer"); fi
        done
        if [ "$LOCKSTEP" = 1 ] && [ "${#runnable[@]}" -gt 0 ]; then
            cmds=()
            for peer in "${runnable[@]}"; do
                cmds+=("$(peer_cmd "$peer") --net $net --batch $batch --mode $mode")
            done
            names="$(IFS=,; echo "${runnable[*]}")"
            meta="{\"net\": \"$net\", \"batch\": $batch, \"mode\": \"$mode\", \"round\": $r}"
            wait_quiet
            echo "# $(date +%T) round $r: lockstep $names on $net b$batch $mode" | tee -a "$LOG" >&2
            while IFS= read -r line; do
                echo "$line" >>"$OUT"
                echo "$line" >&2
            done < <(BENCH_ROUND=$r python3 "$HERE/lockstep.py" --timeout "$RUN_TIMEOUT" \
                     --names "$names" --meta "$meta" -- "${cmds[@]}" 2>>"$LOG" | grep '^{')
            continue
        fi
        for peer in "${runnable[@]}"; do
            wait_quiet
            echo "# $(date +%T) round $r: $peer $net b$batch $mode" | tee -a "$LOG" >&2
            line="$(BENCH_ROUND=$r timeout "$RUN_TIMEOUT" $(peer_cmd "$peer") --net "$net" \
                    --batch "$batch" --mode "$mode" 2>>"$LOG" | grep '^{' | tail -n 1)"
            if [ -n "$line" ]; then
                echo "$line" >>"$OUT"
                echo "$line" >&2
            else
                err="{\"lib\": \"$peer\", \"net\": \"$net\", \"batch\": $batch, \"mode\": \"$mode\""
                echo "$err, \"round\": $r, \"error\": \"no result (see $LOG)\"}" >>"$OUT"
                echo "  FAILED (see $LOG)" >&2
            fi
        done
    done
done
echo "# $(date -Is) done" | tee -a "$LOG" >&2
