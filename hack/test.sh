#!/usr/bin/env bash
# hack/test.sh runs make test's two Go modules at once: drover's packages in the foreground,
# several at a time, and the Helm module (hack/helm) beside them, its output printed after.
# PARALLEL is go test's -p for drover's packages (the Makefile's TEST_PARALLEL).
# Usage: hack/test.sh GO TIMEOUT PARALLEL [go test flags...]
set -uo pipefail
go_cmd=$1 timeout=$2 parallel=$3
shift 3

helm_out=$(mktemp)
trap 'rm -f "$helm_out"' EXIT
(cd hack/helm && "$go_cmd" test -count=1 -timeout "$timeout" "$@" ./... >"$helm_out" 2>&1) &
helm_pid=$!
echo "$go_cmd test -count=1 -p $parallel -timeout $timeout $* ./...   (and in hack/helm: $go_cmd test -count=1 -timeout $timeout $* ./...)"

"$go_cmd" test -count=1 -p "$parallel" -timeout "$timeout" "$@" ./...
main_rc=$?

wait "$helm_pid"
helm_rc=$?
echo "hack/helm (the Helm module, run beside the packages above):"
cat "$helm_out"
if [ "$main_rc" -ne 0 ] || [ "$helm_rc" -ne 0 ]; then
	exit 1
fi
