#!/usr/bin/env bash
# The report pictures in docs/: a crawl of builtin:shop (the test suite's), its PDF's first pages
# as PNGs (pdftoppm, Debian's poppler-utils) and the HTML as headless Chromium shows it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/report-samples
rm -rf "$out" && mkdir -p "$out"
DROID_REPORT_SAMPLES="$PWD/$out" cargo test --locked --test integration report::sample_reports -- --exact
pdftoppm -png -r 60 -f 1 -l 4 "$out/report.pdf" docs/report-pdf
# The screen graph's page and the thumbnails' page, wherever they fall.
pages=$(pdfinfo "$out/report.pdf" | awk '/^Pages:/ {print $2}')
for page in $(seq 1 "$pages"); do
    text=$(pdftotext -f "$page" -l "$page" "$out/report.pdf" -)
    case "$text" in
        *"Screen graph:"*) pdftoppm -png -r 60 -f "$page" -l "$page" -singlefile "$out/report.pdf" docs/report-pdf-graph ;;
        *"Screens: "*) pdftoppm -png -r 60 -f "$page" -l "$page" -singlefile "$out/report.pdf" docs/report-pdf-screens ;;
    esac
done
profile=$(mktemp -d)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --window-size=1280,2200 \
    --screenshot="$PWD/docs/report-html.png" "file://$PWD/$out/report.html"
rm -rf "$profile"
cp "$out/report.txt" docs/report-sample.txt
ls -l docs/report-*
