#!/usr/bin/env bash
# Two builds of the gateway measured in alternation on the peers bench's all-policies row, so
# that the machine's drift (this 2-core machine's speed moves by ±10 % between runs) falls on
# both alike (bench/README.md, "Peers"). Each side is a `sovereign-bench` and the `sovereign`
# it starts; a side may add peers flags after a `--`:
#
#   bench/peers-pairs.sh ROUNDS NAME_A BENCH_A BIN_A NAME_B BENCH_B BIN_B [-- FLAGS_B...]
#
# e.g. bench/peers-pairs.sh 5 before /work/bin-old/sovereign-bench /work/bin-old/sovereign \
#        after target/release/sovereign-bench target/release/sovereign
#
# PEERS_FLAGS (split on spaces) is given to both sides, e.g. PEERS_FLAGS="--upstream nginx --load
# wrk" for the issue's own harness.
#
# Prints one line per run (all policies: req/s, p50 ms, p99 ms; CPU µs per request; the
# no-policies row's req/s; other load) and each side's mean req/s at the end. Peers (LiteLLM,
# Portkey, litellm-rs) are skipped: 8 s measured after 2 s of warm-up per row.
set -euo pipefail

if [ $# -lt 7 ]; then
    sed -n '2,15p' "$0" >&2
    exit 2
fi
rounds=$1
name_a=$2 bench_a=$3 bin_a=$4
name_b=$5 bench_b=$6 bin_b=$7
shift 7
flags_b=()
if [ "${1:-}" = "--" ]; then
    shift
    flags_b=("$@")
fi

one() { # NAME BENCH BIN [FLAGS...]
    local name=$1 bench=$2 bin=$3 out all cpu none
    shift 3
    # shellcheck disable=SC2086 # PEERS_FLAGS is a list of flags
    out=$("$bench" peers --bin "$bin" --skip litellm,portkey,litellm-rs --duration 8 --warmup 2 ${PEERS_FLAGS:-} "$@" 2>&1) || {
        echo "$name: the run failed:" >&2
        echo "$out" | tail -5 >&2
        exit 1
    }
    all=$(echo "$out" | grep -E '^sovereign, all policies +[0-9]')
    none=$(echo "$out" | grep -E '^sovereign, no policies +[0-9]' | awk '{print $6}')
    cpu=$(echo "$out" | grep -E '^sovereign, all policies \(' | grep -oE '[0-9]+ µs CPU')
    echo "$name $(echo "$all" | awk '{print $6, "req/s, p50", $7, "ms, p99", $8, "ms"}'), $cpu per request; no policies $none req/s; other load $(echo "$all" | awk '{print $NF}')"
}

log=$(mktemp)
for _ in $(seq "$rounds"); do
    one "$name_a" "$bench_a" "$bin_a" | tee -a "$log"
    one "$name_b" "$bench_b" "$bin_b" "${flags_b[@]}" | tee -a "$log"
done
for name in "$name_a" "$name_b"; do
    awk -v n="$name" '$1 == n { s += $2; k++ } END { printf "%s: mean %.0f req/s over %d runs\n", n, s / k, k }' "$log"
done
rm -f "$log"
