#!/bin/bash
# Checks that the runtime image installs exactly the Debian packages that provide the shared libraries the binary
# uses: every NEEDED entry of BINARY (resolved with ldd) and every library it names for dlopen (sonames among its
# strings, resolved with ldconfig) is mapped to its package with dpkg -S, and the set is compared with the
# RUNTIME_PACKAGES build argument of DOCKERFILE. Packages every Debian base image already has (libc6 and its
# companions) are not expected in the list; a dlopen name not installed here (the NVIDIA driver's libraries, which
# the host provides) is reported and not required.
#
#   tests/deploy/check_runtime_libs.sh build/acceld docker/Dockerfile
#
# Prints one "library -> package" line per NEEDED entry; exits 0 when the sets agree, 1 when they differ (naming
# what is missing and what is extra), 2 on a usage or lookup error.
set -euo pipefail

BASE_PACKAGES="libc6 libgcc-s1 libstdc++6 zlib1g"

if [ "$#" -ne 2 ]; then
	echo "usage: $0 BINARY DOCKERFILE" >&2
	exit 2
fi
binary=$1
dockerfile=$2
for f in "$binary" "$dockerfile"; do
	if [ ! -r "$f" ]; then
		echo "check_runtime_libs: cannot read $f" >&2
		exit 2
	fi
done

# the packages the image installs: ARG RUNTIME_PACKAGES="a b \<newline> c"
listed=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile" |
	sed -n 's/^ARG RUNTIME_PACKAGES="\([^"]*\)".*/\1/p' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
if [ -z "$listed" ]; then
	echo "check_runtime_libs: no ARG RUNTIME_PACKAGES=\"...\" in $dockerfile" >&2
	exit 2
fi

PATH=$PATH:/sbin:/usr/sbin
ldd_out=$(ldd "$binary")
ldconfig_out=$(ldconfig -p)
needed=$(LC_ALL=C readelf -d "$binary" | sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\].*/\1/p')
dlopened=$(strings -n 6 "$binary" | grep -E '^lib[A-Za-z0-9_+-]+[.]so([.][0-9]+)*$' | sort -u |
	grep -vxF -f <(printf '%s\n' "$needed") || true)
required=""
for lib in $needed $dlopened; do
	case "$lib" in
	libasan.so* | libubsan.so* | libtsan.so* | liblsan.so*)
		# a SANITIZE= build: the sanitizer runtimes belong to that build, never to the image
		echo "$lib -> (sanitizer runtime; ignored)"
		continue
		;;
	esac
	# here-strings, not pipes: a reader that stops at its first match would end the writer with SIGPIPE, which
	# pipefail turns into the script's exit status
	if grep -qxF "$lib" <<<"$needed"; then
		path=$(awk -v l="$lib" '$1 == l && $2 == "=>" { print $3; exit }' <<<"$ldd_out")
		if [ -z "$path" ] || [ "$path" = "not" ]; then
			echo "check_runtime_libs: ldd cannot resolve $lib" >&2
			exit 2
		fi
	else
		path=$(awk -v l="$lib" '$1 == l { print $NF; exit }' <<<"$ldconfig_out")
		if [ -z "$path" ]; then
			echo "$lib (dlopen) -> not installed here; provided by the host"
			continue
		fi
	fi
	pkg=""
	for candidate in "$path" "$(readlink -f "$path")"; do
		if owner=$(dpkg -S "$candidate" 2>/dev/null); then
			pkg=${owner%%$'\n'*}
			pkg=${pkg%%:*}
			break
		fi
	done
	if [ -z "$pkg" ]; then
		echo "check_runtime_libs: no Debian package owns $path ($lib)" >&2
		exit 2
	fi
	if grep -qxF "$lib" <<<"$needed"; then
		echo "$lib -> $pkg"
	else
		echo "$lib (dlopen) -> $pkg"
	fi
	case " $BASE_PACKAGES " in
	*" $pkg "*) ;;
	*) required="$required $pkg" ;;
	esac
done
required=$(printf '%s\n' "$required" | tr -s ' ' '\n' | sed '/^$/d' | sort -u)

missing=$(comm -23 <(printf '%s\n' "$required") <(printf '%s\n' "$listed"))
extra=$(comm -13 <(printf '%s\n' "$required") <(printf '%s\n' "$listed"))
status=0
if [ -n "$missing" ]; then
	echo "missing from RUNTIME_PACKAGES: $(printf "%s" "$missing" | tr "\n" " ")"
	status=1
fi
if [ -n "$extra" ]; then
	echo "not needed by $binary but in RUNTIME_PACKAGES: $(printf "%s" "$extra" | tr "\n" " ")"
	status=1
fi
if [ "$status" -eq 0 ]; then
	echo "RUNTIME_PACKAGES matches: $(printf '%s' "$listed" | tr '\n' ' ')"
fi
exit "$status"
