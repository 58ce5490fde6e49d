#!/usr/bin/env bash
# Renders experiments/reports/README.md (the front page) and a report to HTML as a Markdown
# viewer would, and screenshots them in headless Chromium, so a person can check the page and its
# figures in a real browser (issue #65). Not part of CI: it needs Debian's chromium-headless-shell
# and python3-markdown, which install_deps.sh does not install.
#   experiments/front_page_screenshot.sh [OUT_DIR] [REPORT ...]   (default /tmp/fgl-screenshots)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/fgl-screenshots}
shift || true
reports=("experiments/reports/README.md" "${@:-experiments/reports/fedtad/table2.md}")
browser=$(command -v chromium-headless-shell || command -v chromium || true)
if [[ -z $browser ]]; then
  echo "no headless Chromium: apt-get install chromium-headless-shell python3-markdown" >&2
  exit 1
fi
mkdir -p "$out"
for md in "${reports[@]}"; do
  [[ -f $md ]] || { echo "$md: no such report" >&2; exit 1; }
  name=$(echo "${md#experiments/reports/}" | tr '/' '_')
  name=${name%.md}
  # The HTML sits beside the Markdown so relative links to its SVGs resolve; removed afterwards.
  html="$(dirname "$md")/.screenshot_$name.html"
  /usr/bin/python3 - "$md" "$html" <<'PY'
import sys, markdown
src, dst = sys.argv[1], sys.argv[2]
body = markdown.markdown(open(src, encoding="utf-8").read(), extensions=["tables", "fenced_code", "md_in_html"])
css = ("body{font-family:sans-serif;max-width:1280px;margin:24px auto;line-height:1.45;color:#1f2328}"
       "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #d0d7de;padding:4px 8px}"
       "img{max-width:100%}code{background:#f6f8fa;padding:1px 4px}")
open(dst, "w", encoding="utf-8").write(
    "<!doctype html><meta charset=utf-8><style>%s</style><body>%s</body>" % (css, body))
PY
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2400 \
    --screenshot="$out/$name.png" "file://$PWD/$html" 2>/dev/null
  # The figures alone, at their own size.
  rm -f "$html"
  echo "$out/$name.png"
done
for svg in experiments/reports/front_page_cells.svg experiments/reports/front_page_gains.svg; do
  [[ -f $svg ]] || continue
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1250,950 \
    --screenshot="$out/$(basename "$svg" .svg).png" "file://$PWD/$svg" 2>/dev/null
  echo "$out/$(basename "$svg" .svg).png"
done
