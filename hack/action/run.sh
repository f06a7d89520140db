#!/usr/bin/env bash
# The GitHub Action's run step (action.yml at the repository root), kept
# here so that it can be run, and tested, outside GitHub: it takes the
# action's inputs from INPUT_* variables, as a composite step passes them,
# runs regcheck and exits with regcheck's exit code (0 clean, 1 findings,
# 2 usage, 3 incomplete). integration/action_test.go runs it.
#
#   INPUT_COMMAND       pin-check (regcheck pin --check) or scan (regcheck scan -f)
#   INPUT_PATHS         files and folders, separated by spaces or new lines (default .)
#   INPUT_FORMAT        -o for the log (default github: annotations on the lines)
#   INPUT_UPLOAD_SARIF  true: also write SARIF to INPUT_SARIF_FILE, for upload-sarif
#   INPUT_SARIF_FILE    default regcheck.sarif
#   INPUT_FAIL_ON       scan's --fail-on (default broken); pin --check fails on any unpinned reference
#   INPUT_ARGS          more flags, split on spaces (--registries-config FILE, --exclude GLOB…)
#   REGCHECK            the binary (default: regcheck on PATH)
#   GITHUB_OUTPUT       when set, exit-code= and sarif-file= are appended to it
set -uo pipefail

regcheck=${REGCHECK:-regcheck}
command=${INPUT_COMMAND:-pin-check}
format=${INPUT_FORMAT:-github}
upload=${INPUT_UPLOAD_SARIF:-false}
sarif=${INPUT_SARIF_FILE:-regcheck.sarif}
fail_on=${INPUT_FAIL_ON:-broken}
read -r -d '' -a paths <<<"${INPUT_PATHS:-.}"
read -r -d '' -a extra <<<"${INPUT_ARGS:-}"
[ ${#paths[@]} -gt 0 ] || paths=(.)

finish() {
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		echo "exit-code=$1" >>"$GITHUB_OUTPUT"
		[ "$upload" = true ] && echo "sarif-file=$sarif" >>"$GITHUB_OUTPUT"
	fi
	exit "$1"
}

case "$upload" in
true | false) ;;
*)
	echo "regcheck action: upload-sarif is \"$upload\": want true or false" >&2
	finish 2
	;;
esac

case "$command" in
pin-check)
	# pin --check asks no registry: one run for the log, one for SARIF.
	"$regcheck" pin --check -o "$format" "${extra[@]}" -- "${paths[@]}"
	code=$?
	if [ "$upload" = true ] && [ "$code" -ne 2 ]; then
		"$regcheck" pin --check -o sarif "${extra[@]}" -- "${paths[@]}" >"$sarif" 2>/dev/null
	fi
	;;
scan)
	# scan asks the registries: one run, SARIF to the file when asked.
	files=()
	for p in "${paths[@]}"; do files+=(-f "$p"); done
	if [ "$upload" = true ]; then
		"$regcheck" scan -o sarif --fail-on "$fail_on" "${extra[@]}" "${files[@]}" >"$sarif"
		code=$?
		echo "regcheck action: SARIF in $sarif" >&2
	else
		"$regcheck" scan -o "$format" --fail-on "$fail_on" "${extra[@]}" "${files[@]}"
		code=$?
	fi
	;;
*)
	echo "regcheck action: command is \"$command\": want pin-check or scan" >&2
	code=2
	;;
esac
finish "$code"
