#!/bin/sh
# usage: monitoring_test.sh SOURCE_DIR PHALANXD PHALANX_AGENT GSUB GINFO GCANCEL
# config/monitoring (docs/monitoring.md) checked against the real daemon:
# 1. promtool check config prometheus.yml, check rules, test rules (the alerts' unit tests);
# 2. the Grafana dashboard parses, has a stable uid, the $datasource variable on every panel
#    and target, unique panel ids, and every expr is valid PromQL (promtool checks it as a
#    recording rule, with Grafana's variables filled in);
# 3. every phalanx_* metric an expr of the dashboard or the rules names is exported by a
#    running phalanxd's /metrics (jobs running and pending, four agents), and every phalanx:*
#    name is a recording rule of phalanx-rules.yml.
# 77 (skipped) without promtool, jq or curl.
set -u
src=$1 phalanxd=$2 agent=$3 gsub=$4 ginfo=$5 gcancel=$6
PROMTOOL=${PROMTOOL:-promtool}
for tool in "$PROMTOOL" jq curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped"; exit 77; }
done
mon=$src/config/monitoring
dash=$mon/grafana/dashboards/phalanx.json
. "$(dirname "$0")/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$gcancel

# 1. Prometheus' own checks.
"$PROMTOOL" check config "$mon/prometheus.yml" >"$dir/check.txt" 2>&1 || { cat "$dir/check.txt"; fail "promtool check config"; }
"$PROMTOOL" check rules "$mon/phalanx-rules.yml" >"$dir/check.txt" 2>&1 || { cat "$dir/check.txt"; fail "promtool check rules"; }
(cd "$mon" && "$PROMTOOL" test rules phalanx-rules.test.yml) >"$dir/test.txt" 2>&1 ||
  { cat "$dir/test.txt"; fail "promtool test rules"; }

# 2. The dashboard.
jq -e . "$dash" >/dev/null || fail "$dash: not JSON"
[ "$(jq -r .uid "$dash")" = phalanx-cluster ] || fail "$dash: uid is not phalanx-cluster"
jq -e '.templating.list[] | select(.name == "datasource" and .type == "datasource" and .query == "prometheus")' "$dash" \
  >/dev/null || fail "$dash: no \$datasource variable"
bad=$(jq -r '[.panels[] | select(.type != "row") | select(.datasource.uid != "${datasource}" or
  ([.targets[] | select(.datasource.uid != "${datasource}")] | length) > 0) | .title] | join(", ")' "$dash")
[ -z "$bad" ] || fail "$dash: panels not on \$datasource: $bad"
[ "$(jq '[.panels[].id] | length' "$dash")" = "$(jq '[.panels[].id] | unique | length' "$dash")" ] ||
  fail "$dash: panel ids repeat"
[ "$(jq '[.panels[] | select(.type != "row") | .targets[] | select((.expr // "") == "")] | length' "$dash")" = 0 ] ||
  fail "$dash: a target without expr"
jq -r '.panels[] | select(.type != "row") | .targets[].expr' "$dash" >"$dir/dash-exprs.txt"
[ -s "$dir/dash-exprs.txt" ] || fail "$dash: no exprs"
# Every expr as a recording rule: promtool parses it (Grafana's variables as Grafana fills them).
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  n=0
  while IFS= read -r e; do
    n=$((n + 1))
    e=$(printf '%s' "$e" | sed 's/\$__rate_interval/5m/g; s/\$instance/.*/g')
    printf '      - record: dashboard_expr_%s\n        expr: %s\n' "$n" "$(printf '%s' "$e" | jq -Rs .)"
  done <"$dir/dash-exprs.txt"
} >"$dir/dash-rules.yml"
"$PROMTOOL" check rules "$dir/dash-rules.yml" >"$dir/check.txt" 2>&1 ||
  { cat "$dir/check.txt" "$dir/dash-rules.yml"; fail "$dash: an expr is not valid PromQL"; }

# 3. The names against a running phalanxd.
start_daemon "$phalanxd"
start_agents "$agent" 4
wait_nodes_up "$ginfo" 4
export PHALANX_SOCKET=$sock
mkdir "$dir/work"
cd "$dir/work" || fail "cd"
"$gsub" -G 16 --topology leaf -J gang --wrap "sleep 30" >/dev/null || fail "gsub"
"$gsub" -G 32 -J big --wrap "sleep 1" >/dev/null || fail "gsub"
scraped() {
  curl -fsS "http://127.0.0.1:$http_port/metrics" >"$dir/metrics.txt" &&
    grep -q '^phalanx_gpus{state="allocated"} 16$' "$dir/metrics.txt" &&
    grep -q '^phalanx_jobs{state="pending"} 1$' "$dir/metrics.txt"
}
deadline 30 scraped || { cat "$dir/metrics.txt"; fail "/metrics never showed the 16-GPU job running, one pending"; }
sed -n 's/^\([a-zA-Z_:][a-zA-Z0-9_:]*\).*/\1/p' "$dir/metrics.txt" | grep -v '^#' | sort -u >"$dir/exported.txt"
sed -n 's/^ *- record: *\(.*\)$/\1/p' "$mon/phalanx-rules.yml" | sort -u >"$dir/recorded.txt"
sed -n 's/^ *expr: *//p' "$mon/phalanx-rules.yml" >"$dir/rule-exprs.txt"
# Multi-line exprs (expr: >) are the indented lines after them: take every line of the file that
# is not a comment, an annotation or a label instead, for the names.
grep -v '^ *#\|summary:\|description:' "$mon/phalanx-rules.yml" >>"$dir/rule-exprs.txt"
checked=0
for file in "$dir/dash-exprs.txt" "$dir/rule-exprs.txt"; do
  for name in $(grep -o 'phalanx[_:][a-zA-Z0-9_:]*' "$file" | sort -u); do
    case $name in
      phalanx:*) grep -qx "$name" "$dir/recorded.txt" || fail "$name ($file) is not a recording rule of phalanx-rules.yml" ;;
      *) grep -qx "$name" "$dir/exported.txt" || fail "$name ($(basename "$file")) is not in phalanxd's /metrics" ;;
    esac
    checked=$((checked + 1))
  done
done
[ "$checked" -ge 10 ] || fail "only $checked names checked"
echo "config/monitoring: promtool config/rules/tests clean; dashboard $(wc -l <"$dir/dash-exprs.txt") exprs valid; $checked names found in /metrics or the rules"
