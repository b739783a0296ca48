#!/usr/bin/env bash
# Opens `tessera profile --html`'s report in headless Chromium and checks what
# it rendered: the operator table has one row per operation (as
# `tessera profile --json --by operation` counts them), the timeline one row
# per tile, no script error or console message, and no element injected by a
# hostile name. Keeps report.html and report.png in WORKDIR for a person to
# look at. Exits 77 (ctest: skipped) when Chromium is not installed.
#
#   report_in_browser.sh TESSERA MAKE_SAMPLE_PROFILE WORKDIR
set -euo pipefail
tessera=$1 make_profile=$2 work=$3

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: Chromium is not installed (scripts/setup report installs Debian's chromium)"
  exit 77
fi

mkdir -p "$work"
tiles=1472
"$make_profile" "$work/sample.profile" "$tiles" 2
"$tessera" profile "$work/sample.profile" --html "$work/report.html" >/dev/null
operations=$("$tessera" profile "$work/sample.profile" --json --by operation --limit 0 |
  grep -c '"averageActiveTiles"')

# --no-sandbox: ctest may run as root, where Chromium's sandbox refuses to start.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,2000
       --virtual-time-budget=20000 --enable-logging=stderr --v=0)
"$browser" "${flags[@]}" --dump-dom "file://$work/report.html" >"$work/dom.html" 2>"$work/console.log"
"$browser" "${flags[@]}" --screenshot="$work/report.png" "file://$work/report.html" \
  >/dev/null 2>>"$work/console.log"

fail() { echo "FAILED: $*"; exit 1; }
status=$(grep -o '<div id="status"[^>]*>' "$work/dom.html" || true)
[ -n "$status" ] || fail "the page has no status element (did it load?)"
echo "$status"
grep -q 'data-rendered="true"' <<<"$status" || fail "the page did not finish rendering"
grep -q 'data-errors="0"' <<<"$status" || fail "script errors: $(grep -o '<div id="errors">[^<]*' "$work/dom.html")"
grep -q "data-timeline-tiles=\"$tiles\"" <<<"$status" || fail "the timeline does not have $tiles rows"
grep -q "data-operator-rows=\"$operations\"" <<<"$status" || fail "the operator table does not have $operations rows"
rows=$(perl -0ne 'print $1 if /<table id="operator-table">(.*?)<\/table>/s' "$work/dom.html" |
  grep -o '<tr>' | wc -l)
[ "$rows" -eq $((operations + 1)) ] || fail "the operator table's DOM has $rows rows, not $operations and a header"
grep -q 'id="injected"' "$work/dom.html" && fail "a name in the profile injected an element"
grep -q '&lt;/script&gt;&lt;img id=injected' "$work/dom.html" || fail "the hostile name is not shown as text"
if grep -q 'CONSOLE' "$work/console.log"; then
  fail "console messages: $(grep 'CONSOLE' "$work/console.log" | head -3)"
fi
# The flame graph's kind boxes and the header's shares are one number each:
# the same cycles (the summary's, as --json prints them) over the same
# denominator, so the same text.
attribute() { grep -o "data-$1=\"[^\"]*\"" <<<"$status" | cut -d'"' -f2; }
flame_shares=$(attribute flame-shares) header_shares=$(attribute header-shares)
[ -n "$flame_shares" ] || fail "the page does not say the flame graph's shares"
[ "$flame_shares" = "$header_shares" ] ||
  fail "the flame graph says '$flame_shares' but the header '$header_shares'"
summary_cycles=$("$tessera" profile "$work/sample.profile" --json |
  perl -MJSON::PP -0ne '$k = decode_json($_)->{summary}{kinds};
    print join("; ", sort map { "$_ $k->{$_}{tileCycles}" } keys %$k)')
[ "$(attribute flame-cycles)" = "$summary_cycles" ] ||
  fail "the flame graph's kinds hold '$(attribute flame-cycles)', the summary '$summary_cycles'"
echo "shares: $flame_shares"
[ -s "$work/report.png" ] || fail "no screenshot"
echo "report: $work/report.html ($(stat -c %s "$work/report.html") bytes), screenshot: $work/report.png"
