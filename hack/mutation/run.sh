#!/usr/bin/env bash
# run.sh: put each deliberate bug of mutations.tsv in, one at a time, run
# only its package's unit tests, record killed or survived, and revert.
#
#   hack/mutation/run.sh            # every row
#   hack/mutation/run.sh wa01 sc02  # these rows only
#
# The files it mutates must have no uncommitted change. Patches come from
# patches/<id>.patch (make-patches.py writes them from mutations.tsv).
# Results go to stdout and to $OUT (default /tmp/mut/results.tsv): id,
# result (killed, survived, build-failed, no-patch), seconds, package,
# what the bug does. A row's package column may carry go test flags
# after the package (e.g. "./admission/ -skip TestCosignVerifier").
set -u
cd "$(git rev-parse --show-toplevel)"
here=hack/mutation
out=${OUT:-/tmp/mut/results.tsv}
logs=$(dirname "$out")/logs
mkdir -p "$logs"
: >"$out"
want=" $* "
killed=0 survived=0 total=0
while IFS= read -r line; do
	case $line in '' | \#*) continue ;; esac
	id=$(cut -f1 <<<"$line")
	pkg=$(cut -f2 <<<"$line")
	what=$(cut -f6 <<<"$line")
	if [ $# -gt 0 ] && [[ $want != *" $id "* ]]; then continue; fi
	total=$((total + 1))
	patch=$here/patches/$id.patch
	if ! git apply "$patch" 2>/dev/null; then
		printf '%s\tno-patch\t0\t%s\t%s\n' "$id" "$pkg" "$what" | tee -a "$out"
		continue
	fi
	start=$(date +%s)
	# shellcheck disable=SC2086 # pkg may carry flags
	go test -count=1 -timeout 10m $pkg >"$logs/$id.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	git apply -R "$patch" || git checkout -- "$(cut -f3 <<<"$line")"
	if grep -q -e '\[build failed\]' -e '\[setup failed\]' "$logs/$id.log"; then
		result=build-failed
	elif [ $rc -ne 0 ]; then
		result=killed
		killed=$((killed + 1))
	else
		result=survived
		survived=$((survived + 1))
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$result" "$secs" "$pkg" "$what" | tee -a "$out"
done <"$here/mutations.tsv"
echo "total $total, killed $killed, survived $survived" | tee -a "$out"
