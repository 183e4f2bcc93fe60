#!/usr/bin/env bash
# hack/test-long.sh runs make test's long tier: the tests whose first statement is
# labtest.LongTier (internal/lab/labtest/tier.go), which make test skips, naming the shorter test
# it runs in their place. One go test per package, the packages one after another.
# Usage: hack/test-long.sh GO TIMEOUT [go test flags...]
set -uo pipefail
go_cmd=$1 timeout=$2
shift 2

# The long tier's tests, as "dir TestName" lines: a Test function whose body starts with the call.
tests=$(git ls-files '*_test.go' | xargs awk '
	/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name); first = 1; next }
	first && NF > 0 { if ($0 ~ /^\tlabtest\.LongTier\(/) { d = FILENAME; sub(/\/[^\/]*$/, "", d); print d, name } first = 0 }
' | sort -u)
if [ -z "$tests" ]; then
	echo "hack/test-long.sh: no test calls labtest.LongTier" >&2
	exit 1
fi

rc=0
for dir in $(cut -d' ' -f1 <<<"$tests" | sort -u); do
	names=$(awk -v d="$dir" '$1 == d { printf "%s%s", sep, $2; sep = "|" }' <<<"$tests")
	echo "== ./$dir: $names"
	DROVER_TESTS=long "$go_cmd" test -count=1 -timeout "$timeout" -run "^($names)\$" "$@" "./$dir" || rc=1
done
exit $rc
