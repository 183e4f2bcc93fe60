#!/usr/bin/env bash
# hack/test.sh runs make test's two Go modules at once: drover's packages in the foreground,
# several at a time, and the Helm module (hack/helm) beside them, its output printed after.
# PARALLEL is go test's -p for drover's packages (the Makefile's TEST_PARALLEL).
# Usage: hack/test.sh GO TIMEOUT PARALLEL [go test flags...]
set -uo pipefail
go_cmd=$1 timeout=$2 parallel=$3
shift 3

helm_out=$(mktemp)
built=$(mktemp -d)
trap 'rm -rf "$helm_out" "$built"' EXIT

# Every test package that starts a lab runs drover's binary: built once here, each lab links it
# (labtest.BuiltDroverEnv) instead of linking its own.
"$go_cmd" build -o "$built/drover" ./cmd/drover || exit 1
export DROVER_TEST_BUILT_DROVER="$built/drover"
(cd hack/helm && "$go_cmd" test -count=1 -timeout "$timeout" "$@" ./... >"$helm_out" 2>&1) &
helm_pid=$!
# go test starts the packages' runs in the order it is given them (cmd/go gives each action the
# priority of its place in that order), and the suite is as long as its last package: the longest
# packages go first, so that no long one starts when the others are done. hack/test-order.txt
# lists them, longest first, as measured; the others follow in go list's order.
packages=$("$go_cmd" list ./...) || exit 1
ordered=$(
	grep -v '^#' hack/test-order.txt | while read -r p; do
		grep -x "$p" <<<"$packages"
	done
	grep -vxF -f <(grep -v '^#' hack/test-order.txt) <<<"$packages"
)
echo "$go_cmd test -count=1 -p $parallel -timeout $timeout $* <the packages of ./..., the longest first (hack/test-order.txt)>   (and in hack/helm: $go_cmd test -count=1 -timeout $timeout $* ./...)"

# shellcheck disable=SC2086 # one package per word
"$go_cmd" test -count=1 -p "$parallel" -timeout "$timeout" "$@" $ordered
main_rc=$?

wait "$helm_pid"
helm_rc=$?
echo "hack/helm (the Helm module, run beside the packages above):"
cat "$helm_out"
if [ "$main_rc" -ne 0 ] || [ "$helm_rc" -ne 0 ]; then
	exit 1
fi
