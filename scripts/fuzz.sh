#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/README.md) and prints, per target, the
# executions, their rate and the coverage reached.
#
#   scripts/fuzz.sh [--seconds S] [--runs N] [--check] [TARGET...]
#
# Each target runs until it has executed N inputs (--runs, default
# 10,000,000) or for S seconds (--seconds, default 600), whichever comes
# first, starting from its corpus in fuzz/corpus/TARGET. Afterwards the
# corpus is merged down to the inputs that reach new coverage, ready to
# commit. With --check (CI), each runs for S seconds (default 5) over the
# committed corpus and the corpus is left as it is.
#
# A target that crashes fails the run; its input is kept in
# fuzz/artifacts/TARGET/. Needs the nightly toolchain (the sanitizers);
# cargo-fuzz is installed if it is missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=""
runs=10000000
check=false
targets=()
while (($#)); do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --check) check=true; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if $check; then
    seconds="${seconds:-5}"
    runs=-1   # no limit but the time
else
    seconds="${seconds:-600}"
fi

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz.sh: the nightly toolchain is needed (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

cargo +nightly fuzz build -O >&2
bin="target/x86_64-unknown-linux-gnu/release"
if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
printf '%-22s %8s %12s %10s %7s %8s %7s\n' target seconds executions "exec/s" cov features corpus
for target in "${targets[@]}"; do
    corpus="corpus/$target"
    mkdir -p "$corpus" "artifacts/$target" "$work/$target"
    # New inputs go to the scratch directory first: the committed corpus
    # changes only by the merge below.
    log="$work/$target.log"
    start=$(date +%s)
    status=0
    "$bin/$target" -max_total_time="$seconds" -runs="$runs" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=4096 -artifact_prefix="artifacts/$target/" \
        "$work/$target" "$corpus" >"$log" 2>&1 || status=$?
    took=$(($(date +%s) - start))
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    features=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    if ((status != 0)); then
        failed+=("$target")
        echo "--- $target failed (exit $status):" >&2
        tail -n 40 "$log" >&2
    elif ! $check; then
        merged="$work/$target.merged"
        mkdir -p "$merged"
        "$bin/$target" -merge=1 "$merged" "$corpus" "$work/$target" >>"$log" 2>&1
        rm -rf "$corpus"
        mv "$merged" "$corpus"
    fi
    files=$(find "$corpus" -type f | wc -l)
    printf '%-22s %8s %12s %10s %7s %8s %7s\n' "$target" "$took" "${executions:-?}" "${rate:-?}" \
        "${cov:-?}" "${features:-?}" "$files"
done
if ((${#failed[@]})); then
    echo "fuzz.sh: crashed or failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
