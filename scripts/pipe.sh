#!/usr/bin/env bash
# The stage pipe: a simulated phone running the bundled shop app, explored step by step by the
# stage binaries wired together in a shell pipe, exactly as a person would run them by hand to
# run, swap or debug one stage (droid-crawl does all of this in one process).
#
#   scripts/pipe.sh [STEPS] [APP]        (default: 15 steps of builtin:shop)
#
# Everything lands in a fresh folder under target/pipe/: crawler.db, the screenshots, the event
# log and the simulator's truth log.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${1:-15}
app=${2:-builtin:shop}
bin=target/debug
out=target/pipe/$(date +%Y%m%d_%H%M%S)
mkdir -p "$out"

"$bin/droid-sim" --app "$app" --truth-log "$out/truth.jsonl" > "$out/sim.ready" &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$out/sim.ready" ] && break; sleep 0.1; done
port=$(sed -E 's/.*"port":([0-9]+).*/\1/' "$out/sim.ready")
package=$("$bin/droid-sim" --app "$app" --describe | head -n 1 | cut -d" " -f1)
echo "droid-sim serving $app on 127.0.0.1:$port" >&2

export ANDROID_ADB_SERVER_PORT=$port
run=pipe-$(date +%s)
db=$out/crawler.db
"$bin/droid-act" launch "$package" > /dev/null

for step in $(seq "$steps"); do
    "$bin/droid-capture" --run "$run" --step "$step" --out "$out/screenshots" \
        | "$bin/droid-hash" \
        | "$bin/droid-decide" --decider heuristic --db "$db" --run "$run" \
        | "$bin/droid-act" --pause-ms 100 \
        | "$bin/droid-record" --db "$db" \
        >> "$out/events.jsonl"
    printf 'step %d: the device is on %s\n' "$step" \
        "$(grep '"screen"' "$out/truth.jsonl" | tail -n 1 | sed -E 's/.*"screen":"([^"]*)".*/\1/')" >&2
done

# A pipe has no driver to end the run, so the script says it ended, as droid-crawl would.
printf '{"type":"run_ended","v":1,"run_id":"%s","ts":"%s","status":"COMPLETED","reason":"max_steps","steps":%d}\n' \
    "$run" "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" "$steps" | "$bin/droid-record" --db "$db" >> "$out/events.jsonl"

"$bin/droid-record" --db "$db" runs
screens=$(grep -o '"screen":"[^"]*"' "$out/truth.jsonl" | sort -u | wc -l)
echo "distinct screens the device showed (truth log): $screens" >&2
echo "everything is in $out" >&2
