#!/usr/bin/env bash
# Opens `tessera profile --html`'s report in headless Chromium and checks what
# it rendered: the operator table has one row per operation (as
# `tessera profile --json --by operation` counts them), the timeline one row
# per tile, no script error or console message, and no element injected by a
# hostile name; then the timeline zoomed twice and the cursor moved to a
# cycle, checked against `tessera profile --at`. Keeps report.html,
# report.png and report-cursor.png in WORKDIR for a person to look at.
# Exits 77 (ctest: skipped) when Chromium is not installed.
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

# The timeline's zoom and cursor, through the page's own handlers
# (report.html#zoom=N&cursor=CYCLE&row=R): two clicks on "+" show the middle
# quarter of the run, and the pointer at a cycle on row R says what the tiles
# do there. The oracle is `tessera profile --at`, which scans every tile's
# steps (the page binary-searches its samples).
total=$("$tessera" profile "$work/sample.profile" --json |
  perl -MJSON::PP -0ne 'print decode_json($_)->{summary}{totalCycles}')
cursor=$((total / 2 + 1234)) row=5
"$browser" "${flags[@]}" --dump-dom "file://$work/report.html#zoom=2&cursor=$cursor&row=$row" \
  >"$work/dom-cursor.html" 2>>"$work/console.log"
status=$(grep -o '<div id="status"[^>]*>' "$work/dom-cursor.html" || true)
grep -q 'data-errors="0"' <<<"$status" || fail "script errors after zooming: $status"
expected_view=$(perl -e 'printf "%d %d", int(3 * $ARGV[0] / 8 + 0.5), int(5 * $ARGV[0] / 8 + 0.5)' "$total")
[ "$(attribute view-start) $(attribute view-end)" = "$expected_view" ] ||
  fail "after two zooms the view is $(attribute view-start)-$(attribute view-end), not $expected_view of $total"
grep -q "cycles $(perl -e '$_ = shift; 1 while s/^(\d+)(\d{3})/$1,$2/; print' "${expected_view% *}")" "$work/dom-cursor.html" ||
  fail "the view's range is not shown"
at=$(attribute cursor-cycle)
[ -n "$at" ] || fail "the cursor says no cycle"
perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= $ARGV[2] + 1 ? 0 : 1)' "$at" "$cursor" "$(attribute cycles-per-pixel)" ||
  fail "the cursor is at cycle $at, not within a pixel of $cursor"
# Rows are less than a pixel tall (1472 in 900 pixels): the pointer lands on a
# row within a pixel of the one asked, which the page names.
row_at=$(attribute cursor-row)
perl -e 'exit(abs($ARGV[0] - $ARGV[1]) <= $ARGV[2] + 1 ? 0 : 1)' "$row_at" "$row" "$(attribute rows-per-pixel)" ||
  fail "the cursor is on row $row_at, not within a pixel of row $row"
readout=$(perl -0ne 'print $1 if /id="cursor-readout">(.*?)<\/div>/s' "$work/dom-cursor.html")
oracle=$("$tessera" profile "$work/sample.profile" --json --at "$at" | perl -MJSON::PP -0e '
  my ($row) = @ARGV; my $at = decode_json(join "", <STDIN>)->{at};
  my %k = %{$at->{kinds}};
  my $commas = sub { my $n = shift; 1 while $n =~ s/^(\d+)(\d{3})/$1,$2/; $n };
  print join(", ", sort map { "$k{$_} $_" } grep { $k{$_} } keys %k), "\n";
  my $t = $at->{tiles}[$row];
  if (!exists $t->{offset}) { print "p$t->{tile}: idle\n"; exit; }
  print "p$t->{tile}: $t->{kind}  $t->{operation}", ($t->{kernel} ne "" ? "  kernel $t->{kernel}" : ""),
        "  [", $commas->($t->{offset}), ", +", $commas->($t->{cycles}), ")\n";' "$row_at")
page_kinds=$(head -1 <<<"$readout" | sed 's/^cycle [0-9,]*:  //' | tr -s ' ' | sed 's/, /\n/g' | sort | paste -sd, | sed 's/,/, /g')
[ "$page_kinds" = "$(head -1 <<<"$oracle")" ] ||
  fail "at cycle $at the page says '$page_kinds', the profile '$(head -1 <<<"$oracle")'"
[ "$(sed -n 2p <<<"$readout")" = "$(sed -n 2p <<<"$oracle")" ] ||
  fail "at cycle $at row $row_at the page says '$(sed -n 2p <<<"$readout")', the profile '$(sed -n 2p <<<"$oracle")'"
echo "cursor at cycle $at (asked $cursor): $(head -1 <<<"$readout"); $(sed -n 2p <<<"$readout")"
"$browser" "${flags[@]}" --screenshot="$work/report-cursor.png" \
  "file://$work/report.html#zoom=2&cursor=$cursor&row=$row" >/dev/null 2>>"$work/console.log"
[ -s "$work/report-cursor.png" ] || fail "no screenshot of the zoomed timeline"
if grep -q 'CONSOLE' "$work/console.log"; then
  fail "console messages: $(grep 'CONSOLE' "$work/console.log" | head -3)"
fi
[ -s "$work/report.png" ] || fail "no screenshot"
echo "report: $work/report.html ($(stat -c %s "$work/report.html") bytes), screenshots: $work/report.png, $work/report-cursor.png"
