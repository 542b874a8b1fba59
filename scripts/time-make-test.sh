#!/usr/bin/env bash
# time-make-test.sh: times a cold `make test`, target by target, on a fresh clone of HEAD
# with empty caches (HiGHS, ONNX Runtime, Go build and module caches), as a new machine or CI
# would run it. The clone goes beside this repository (so ../shared, the model corpus, is
# found as in CI); caches go under a temporary directory. Prints one line per target:
# wall, user and system seconds. Nothing in this repository or in the user's caches is touched.
#
#   scripts/time-make-test.sh            # all of make test's targets
#   WARM=1 scripts/time-make-test.sh     # keep the user's caches (a warm run)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
clone="$(dirname "$repo")/onnxpart-timetest.$$"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$clone" "$tmp"' EXIT # the module cache is read-only
[ -x /usr/bin/time ] || "$repo/scripts/deps.sh" apt-pkg time
git clone -q "$repo" "$clone"
if [ -z "${WARM:-}" ]; then
	export ONNXPART_CACHE="$tmp/cache" GOCACHE="$tmp/gocache" GOMODCACHE="$tmp/gomod"
fi
targets=(deps build vet unit examples test-late) # test-late: the rest, two at a time, as make test runs it
start=$(date +%s)
cd "$clone"
for t in "${targets[@]}"; do
	/usr/bin/time -f "$t: %e s wall, %U s user, %S s sys" -o "$tmp/time" make "$t" >"$tmp/$t.log" 2>&1 ||
		{ cat "$tmp/time"; tail -30 "$tmp/$t.log"; echo "make $t failed" >&2; exit 1; }
	cat "$tmp/time"
done
echo "total: $(($(date +%s) - start)) s wall ($(nproc) cores)"
