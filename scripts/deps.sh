#!/usr/bin/env bash
# deps.sh: installs what onnxpart needs to build and test, into a cache outside the repo.
#
#   scripts/deps.sh highs   -> prints the HiGHS prefix (builds HiGHS 1.10.0 once if needed)
#   scripts/deps.sh ort     -> prints the path of libonnxruntime.so.1 (ONNX Runtime 1.30.0)
#   scripts/deps.sh protoc  -> makes sure protoc is on PATH (only for `make proto`)
#   scripts/deps.sh apt CMD [PKG] -> installs Debian package PKG when command CMD is missing
#   scripts/deps.sh apt-pkg PKG   -> installs Debian package PKG when it is not installed
#
# Registry hosts are never written here: the Debian mirror is read from the machine's apt
# sources and npm uses its own configured registry.
set -euo pipefail

CACHE="${ONNXPART_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/onnxpart}"
HIGHS_VERSION=1.10.0
HIGHS_DEB_TARBALL="highs_${HIGHS_VERSION}+ds.orig.tar.xz"
HIGHS_DEB_SHA256=5964fc1ca4f0b23dd45987bbed1838f2e570e96aa624635ac63d277152b6c94a
ORT_VERSION=1.30.0
ORT_LIB_SHA256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=""
apt_install() {
	command -v apt-get >/dev/null || die "need $* but apt-get is not available; install it by hand"
	if [ -z "$apt_updated" ]; then sudo_if_needed apt-get update -qq >/dev/null 2>&1 || true; apt_updated=1; fi
	log "installing $* with apt-get"
	mkdir -p "$CACHE"
	DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -qq "$@" >"$CACHE/apt.log" 2>&1 ||
		{ tail -20 "$CACHE/apt.log" >&2; die "apt-get install $* failed"; }
}

need_cmd() { # need_cmd COMMAND DEBIAN_PACKAGE
	command -v "$1" >/dev/null 2>&1 || apt_install "$2"
	command -v "$1" >/dev/null 2>&1 || die "$1 is still missing after installing $2"
}

sha256_of() { sha256sum "$1" | awk '{print $1}'; }

# debian_mirror prints the first Debian archive URI the machine's apt configuration names.
debian_mirror() {
	{
		grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{for (i=2;i<=NF;i++) print $i}'
		grep -hE '^deb(-src)? ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -E 's/\[[^]]*\]//' | awk '{print $2}'
	} | grep -vE 'security|updates' | grep -E '/debian/?$' | head -n1 | sed 's#/$##'
}

fetch_highs_source() { # fetch_highs_source DEST_TARBALL
	local dest=$1 mirror
	if [ -n "${ONNXPART_HIGHS_TARBALL:-}" ]; then # a local copy of Debian's tarball (offline machines, timing runs)
		[ "$(sha256_of "$ONNXPART_HIGHS_TARBALL")" = "$HIGHS_DEB_SHA256" ] ||
			die "ONNXPART_HIGHS_TARBALL=$ONNXPART_HIGHS_TARBALL is not $HIGHS_DEB_TARBALL (sha256 mismatch)"
		cp "$ONNXPART_HIGHS_TARBALL" "$dest"
		return 0
	fi
	mirror=$(debian_mirror || true)
	if [ -n "$mirror" ]; then
		log "fetching HiGHS ${HIGHS_VERSION} source from the configured Debian mirror"
		if curl -fsSL --retry 3 -o "$dest.part" "$mirror/pool/main/h/highs/$HIGHS_DEB_TARBALL"; then
			[ "$(sha256_of "$dest.part")" = "$HIGHS_DEB_SHA256" ] || die "sha256 mismatch for $HIGHS_DEB_TARBALL"
			mv "$dest.part" "$dest"
			return 0
		fi
		log "the Debian mirror did not serve $HIGHS_DEB_TARBALL"
	fi
	# Machines without Debian apt: the upstream release tarball (not pinned by the Debian hash).
	local upstream="https://github.com/ERGO-Code/HiGHS/archive/refs/tags/v${HIGHS_VERSION}.tar.gz"
	log "fetching HiGHS ${HIGHS_VERSION} from the upstream release"
	curl -fsSL --retry 3 -o "$dest.part" "$upstream" || die "could not download HiGHS source"
	mv "$dest.part" "$dest"
}

highs_cmake() { # highs_cmake WORK CMAKE_ARGS...: configures and builds $WORK/src in $WORK/build
	local work=$1
	shift
	cmake -S "$work/src" -B "$work/build" "$@" >"$work/cmake.log" 2>&1 || { tail -40 "$work/cmake.log" >&2; return 1; }
	cmake --build "$work/build" -j"$(nproc)" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; return 1; }
}

highs_prefix() {
	if [ -n "${ONNXPART_HIGHS_PREFIX:-}" ]; then
		[ -f "$ONNXPART_HIGHS_PREFIX/lib/pkgconfig/highs.pc" ] || [ -f "$ONNXPART_HIGHS_PREFIX/lib64/pkgconfig/highs.pc" ] ||
			die "ONNXPART_HIGHS_PREFIX=$ONNXPART_HIGHS_PREFIX has no lib/pkgconfig/highs.pc"
		echo "$ONNXPART_HIGHS_PREFIX"; return
	fi
	if pkg-config --exists highs 2>/dev/null && [ "$(pkg-config --modversion highs)" = "$HIGHS_VERSION" ] &&
		[ -f "$(pkg-config --variable=libdir highs)/libhighs.a" ]; then
		echo system; return
	fi
	local prefix="$CACHE/highs-$HIGHS_VERSION"
	if [ -f "$prefix/.complete" ]; then echo "$prefix"; return; fi
	need_cmd cmake cmake
	need_cmd g++ g++
	mkdir -p "$CACHE"
	local work
	work=$(mktemp -d "$CACHE/highs-build.XXXXXX")
	trap "rm -rf '$work'" EXIT
	fetch_highs_source "$work/src.tar"
	mkdir -p "$work/src"
	tar -xf "$work/src.tar" -C "$work/src" --strip-components=1
	log "building HiGHS ${HIGHS_VERSION} (static, takes a few minutes once; cached in $prefix)"
	rm -rf "$prefix"
	# Only the library (with the highs command that its install rules name): no examples,
	# tests or other interfaces. The library compiles as a unity build, several sources per
	# compiler run, which halves the compile's CPU time; HiGHS 1.10 does not compile that way
	# as a whole, so a script run at its project() call turns it on for the library target
	# alone and leaves out the sources that clash when joined: Filereader.cpp and
	# filereaderlp/reader.cpp (each defines its own tolower / kHighsInf) and the C sources
	# (basiclu's lu_list.h has no include guard). Same flags (Release, -O3), same code.
	cat >"$work/unity.cmake" <<-'EOF'
		function(onnxpart_highs_unity)
		  set_target_properties(highs PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 24)
		  get_target_property(srcs highs SOURCES)
		  get_target_property(dir highs SOURCE_DIR)
		  set(alone)
		  foreach(s IN LISTS srcs)
		    cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY "${dir}" NORMALIZE)
		    if(s MATCHES "\\.c$|/io/Filereader\\.cpp$|/filereaderlp/reader\\.cpp$")
		      list(APPEND alone "${s}")
		    endif()
		  endforeach()
		  set_source_files_properties(${alone} TARGET_DIRECTORY highs PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
		endfunction()
		# After the top-level CMakeLists.txt has run, when the highs target exists.
		cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL onnxpart_highs_unity)
	EOF
	local args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DCMAKE_INSTALL_PREFIX="$prefix"
		-DBUILD_TESTING=OFF -DBUILD_EXAMPLES=OFF -DFAST_BUILD=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
	if ! highs_cmake "$work" "${args[@]}" -DCMAKE_PROJECT_HIGHS_INCLUDE="$work/unity.cmake"; then
		# A compiler or CMake (before 3.20) that the unity build does not suit: file by file.
		log "the unity build of HiGHS failed (last lines above); building it file by file"
		rm -rf "$work/build"
		highs_cmake "$work" "${args[@]}" || die "HiGHS build failed"
	fi
	cmake --install "$work/build" >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; die "HiGHS install failed"; }
	touch "$prefix/.complete"
	echo "$prefix"
}

ort_lib() {
	if [ -n "${ONNXPART_ORT_LIB:-}" ]; then
		[ -f "$ONNXPART_ORT_LIB" ] || die "ONNXPART_ORT_LIB=$ONNXPART_ORT_LIB does not exist"
		echo "$ONNXPART_ORT_LIB"; return
	fi
	local dir="$CACHE/onnxruntime-$ORT_VERSION" lib
	lib="$dir/libonnxruntime.so.1"
	if [ -f "$lib" ] && [ "$(sha256_of "$lib")" = "$ORT_LIB_SHA256" ]; then echo "$lib"; return; fi
	need_cmd npm npm
	mkdir -p "$dir"
	local work
	work=$(mktemp -d "$CACHE/ort.XXXXXX")
	trap "rm -rf '$work'" EXIT
	log "fetching onnxruntime-node@${ORT_VERSION} from the npm registry"
	(cd "$work" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null 2>&1) || die "npm pack onnxruntime-node@$ORT_VERSION failed"
	tar -xzf "$work"/onnxruntime-node-*.tgz -C "$work" package/bin/napi-v6/linux/x64/libonnxruntime.so.1 ||
		die "libonnxruntime.so.1 not found in the onnxruntime-node package"
	local got
	got=$(sha256_of "$work/package/bin/napi-v6/linux/x64/libonnxruntime.so.1")
	[ "$got" = "$ORT_LIB_SHA256" ] || die "sha256 mismatch for libonnxruntime.so.1: got $got"
	mv "$work/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$lib"
	echo "$lib"
}

case "${1:-}" in
highs) highs_prefix ;;
ort) ort_lib ;;
protoc) need_cmd protoc protobuf-compiler ;;
apt) need_cmd "$2" "${3:-$2}" ;;
apt-pkg) dpkg -s "$2" >/dev/null 2>&1 || apt_install "$2" ;;
*) die "usage: deps.sh highs|ort|protoc|apt CMD [PKG]" ;;
esac
