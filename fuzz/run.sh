#!/usr/bin/env bash
# Runs libFuzzer targets one after the other for SECONDS each, then prints how
# many inputs each executed and how many crashed; fails if any crashed.
#
#   fuzz/run.sh BUILD SECONDS NAME:DICTIONARY...
#
# NAME's binary is BUILD/fuzz/NAME_fuzzer; it starts from BUILD/NAME/seeds,
# fuzz/regressions/NAME (inputs that once made it fail; a fixed one joins
# them) and the inputs earlier runs found (BUILD/NAME/corpus, where it adds
# what it finds), and writes an input that fails to BUILD/NAME/crash-* (or
# leak-, oom-, timeout-). libFuzzer stops at the first, so a target counts 0
# or 1 crashes per run.
set -u
build=$1 seconds=$2
shift 2
summary=() failed=0
findings() { find "$1" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) | wc -l; }
for target in "$@"; do
  name=${target%%:*} dictionary=${target#*:}
  folder=$build/$name
  mkdir -p "$folder/corpus"
  log=$folder/last_run.log
  echo "== $name: $seconds s"
  before=$(findings "$folder")
  regressions=$(dirname "$0")/regressions/$name
  [[ -d $regressions ]] || regressions=
  "$build/fuzz/${name}_fuzzer" "$folder/corpus" "$folder/seeds" $regressions -dict="$dictionary" \
    -max_total_time="$seconds" -artifact_prefix="$folder/" -print_final_stats=1 > "$log" 2>&1
  status=$?
  # Progress lines are many; the end of the log holds the stats and any report.
  grep -v '^#[0-9]' "$log" | tail -n 40
  after=$(findings "$folder")
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  crashes=$((after - before))
  if ((status != 0 && crashes == 0)); then crashes=1; fi
  ((crashes > 0)) && failed=1
  summary+=("$name: ${executions:-?} executions in $seconds s, $crashes crashes (log: $log)")
done
echo "== fuzzing summary"
printf '%s\n' "${summary[@]}"
exit $failed
