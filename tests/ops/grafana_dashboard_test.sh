#!/usr/bin/env bash
# The Grafana dashboard shipped beside fedcld (packaging/grafana/fedcld.json) must parse, and every
# PromQL query in it must pass promtool's parser and name only metrics fedcld serves (docs/status.md's
# table, which tests/e2e/metrics_test.cpp holds to the daemon).
#
# grafana_dashboard_test.sh SOURCE_DIR
set -euo pipefail
src=$1
python3 - "$src/packaging/grafana/fedcld.json" "$src/docs/status.md" <<'PY'
import json, re, subprocess, sys
dashboard = json.load(open(sys.argv[1]))
documented = set(re.findall(r"^\| `(fedcld_[a-z_]+)`", open(sys.argv[2]).read(), re.M))
exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
failures = []
for expr in exprs:
    for name in re.findall(r"\b(fedcld_[a-z_]+)", expr):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if base not in documented:
            failures.append("%s: %s is not a metric fedcld serves" % (expr, name))
    # promtool checks the query's syntax (the dashboard's variables replaced first).
    query = expr.replace("$instance", ".*")
    check = subprocess.run(["promtool", "check", "rules", "/dev/stdin"], input=(
        "groups:\n- name: dashboard\n  rules:\n  - record: dashboard:query\n    expr: %s\n" % json.dumps(query)),
        capture_output=True, text=True)
    if check.returncode != 0:
        failures.append("%s: %s" % (expr, (check.stdout + check.stderr).strip()))
print("%d panels, %d queries, %d documented metrics" % (len(dashboard["panels"]), len(exprs), len(documented)))
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
PY
