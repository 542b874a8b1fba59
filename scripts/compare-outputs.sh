#!/usr/bin/env bash
# compare-outputs.sh OLD_BIN NEW_BIN [MODELS_DIR...]: plans every corpus model with --seed on
# identical and mixed devices with both binaries and compares the outputs byte for byte
# (stage files, manifest.json, report.html, and the plan JSON of --json -o - less its
# wall-clock "seconds" fields). A refactor
# must leave them identical; exit 1 and a list of the files that differ otherwise. Seeded runs
# stop on work budgets; the generous time limit keeps a loaded machine from cutting one short
# (a cut run says so in a note, and then differs).
set -euo pipefail
old=$1 new=$2
shift 2
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(testdata/models ../shared/models)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
diffs=0 runs=0
di=0
for d in "${dirs[@]}"; do
	di=$((di + 1))
	for m in "$d"/*.onnx; do
		[ -e "$m" ] || continue
		# The directory's index keeps models of one name in two directories apart.
		base=$di-$(basename "$m" .onnx)
		for devs in 4xA100-80G a100-80g,t4,cpu; do
			args=("$m" --devices "$devs" --seed 7 --time-limit 10m -q)
			for bin in old new; do
				b=${!bin}
				out="$work/$bin/$base-$devs"
				mkdir -p "$(dirname "$out")"
				if ! "$b" "${args[@]}" -o "$out" >/dev/null 2>"$out.err"; then
					echo "exit $? " >>"$out.err"
				fi
				# Wall-clock fields are the only ones a rerun may change.
				"$b" "${args[@]}" --json -o - 2>/dev/null | grep -v '"seconds":' >"$out.json" || true
			done
			runs=$((runs + 1))
			same_dirs=true
			if [ -e "$work/old/$base-$devs" ] || [ -e "$work/new/$base-$devs" ]; then
				diff -r -q "$work/old/$base-$devs" "$work/new/$base-$devs" >/dev/null 2>&1 || same_dirs=false
			fi
			if ! $same_dirs ||
				! cmp -s "$work/old/$base-$devs.json" "$work/new/$base-$devs.json" ||
				! cmp -s "$work/old/$base-$devs.err" "$work/new/$base-$devs.err"; then
				echo "DIFFERENT: $m --devices $devs"
				diff -r -q "$work/old/$base-$devs" "$work/new/$base-$devs" || true
				diffs=$((diffs + 1))
			fi
		done
	done
done
echo "$runs runs, $diffs different"
[ "$diffs" -eq 0 ]
