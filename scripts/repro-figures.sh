#!/usr/bin/env bash
# The figures of docs/repro.md: every crash and ANR the bundled apps (and a fixture app) can
# produce, each crawled with the heuristic and minimised as droid-crawl does after a crawl; then
# the time minimising adds to `make demo`'s crawl (the same command with and without
# --no-minimise).
#
#   scripts/repro-figures.sh            (after `make build`; about 3 minutes)
#
# The fixture apps (shared/fixtures/apps/*/model.json) have no crash transition: their ANRs
# come from droid-sim's fault `anr-on:SCREEN`, as the bundled apps' ANRs do. Markdown on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/debug
out=target/repro-figures
rm -rf "$out" && mkdir -p "$out"
fixtures=${DROID_FIXTURES:-../shared/fixtures}
[ -d "$fixtures/apps" ] || fixtures=/work/shared/fixtures

# name | model | steps | extra flags
cases=(
    "shop (make demo)|builtin:shop|92|"
    "settings|builtin:settings|135|"
    "tiny|builtin:tiny|27|"
    "shop, anr-on:checkout|builtin:shop|92|--sim-fault anr-on:checkout"
    "settings, anr-on:about_phone|builtin:settings|135|--sim-fault anr-on:about_phone"
    "tiny, anr-on:results|builtin:tiny|27|--sim-fault anr-on:results"
    "notes (fixture), anr-on:s013|$fixtures/apps/notes/model.json|117|--sim-fault anr-on:s013"
)

echo "| app | failure | steps since launch | minimal steps | replays | seconds | verified | verdict |"
echo "|---|---|---|---|---|---|---|---|"
for case in "${cases[@]}"; do
    IFS='|' read -r name model steps extra <<< "$case"
    dir=$out/$(echo "$name" | tr -c 'a-z0-9\n' '_')
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    "$bin/droid-crawl" --sim "$model" --decider heuristic --max-steps "$steps" $extra \
        --db "$dir/crawler.db" --out "$dir/out" --report none > "$dir/events.jsonl" 2> "$dir/stderr"
    run=$(head -n 1 "$dir/events.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
    "$bin/droid-report" --db "$dir/crawler.db" "$run" --format json > "$dir/report.json"
    python3 - "$name" "$dir/report.json" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
report = json.load(open(path))
crashes = report["crashes"]
if not crashes:
    print(f"| {name} | (none found) | | | | | | |")
for c in crashes:
    m = c.get("minimised") or {}
    what = f'{c["kind"]} {c["exception"] or c["message"]}'.replace("|", "/")[:60]
    print(f'| {name} | {what} | {m.get("steps_before", "")} | {len(m.get("minimal_steps", []))} '
          f'| {m.get("replays", "")} | {m.get("seconds", "")} '
          f'| {m.get("reproduced", "")} of {m.get("verify_replays", "")} | {m.get("verdict", "not minimised")} |')
EOF
done

echo
echo "make demo's crawl (builtin:shop, heuristic, 92 steps), wall-clock seconds:"
for flags in "--no-minimise" ""; do
    dir=$out/demo$flags
    mkdir -p "$dir"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin/droid-crawl" --sim builtin:shop --decider heuristic --max-steps 92 $flags \
        --db "$dir/crawler.db" --out "$dir/out" --report pdf,html,text > "$dir/events.jsonl" 2> "$dir/stderr"
    end=$(date +%s.%N)
    printf '  %-14s %.1f s\n' "${flags:-(minimising)}" "$(echo "$end - $start" | bc)"
done
# The same, measured inside the run: from the crawl's run_ended to its last minimised note
# (replays, verification and exports; the machine's other load does not blur it).
python3 - "$out/demo/events.jsonl" <<'EOF'
import json, sys
from datetime import datetime
events = [json.loads(line) for line in open(sys.argv[1])]
ts = lambda e: datetime.fromisoformat(e["ts"].replace("Z", "+00:00"))
ended = next(e for e in events if e["type"] == "run_ended")
done = [e for e in events if e["type"] == "note" and e.get("kind") == "minimised"]
spent = (ts(done[-1]) - ts(ended)).total_seconds()
replays = sum(d["data"]["replays"] + d["data"]["verify_replays"] for d in done)
print(f"  minimising after run_ended: {spent:.1f} s for {len(done)} failure(s), "
      f"{replays} replays (verification included)")
EOF
