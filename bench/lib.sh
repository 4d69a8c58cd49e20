# shellcheck shell=bash
# Shared by the bench/ scripts: building a program on libacceld and writing a section of REPORT.md. Sourced, not run.

# build_on_lib OUT SRC BUILD_DIR: compiles bench/SRC against BUILD_DIR/libacceld.a (made first when missing) into OUT.
build_on_lib() {
    local out=$1 src=$2 build=$3 root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local pkgs=(libmicrohttpd jansson hwloc OpenCL sqlite3 libcurl) cflags libs
    [ -f "$build/libacceld.a" ] ||
        make -C "$root" --no-print-directory BUILD="$(realpath --relative-to="$root" "$build")" >/dev/null
    read -ra cflags <<<"$(pkg-config --cflags "${pkgs[@]}")"
    read -ra libs <<<"$(pkg-config --libs "${pkgs[@]}")"
    cc -std=c11 -D_GNU_SOURCE -O2 -I"$root/src" "${cflags[@]}" -o "$out" "$root/bench/$src" "$build/libacceld.a" \
        "${libs[@]}" -ldl -lm -pthread
}

# report_section REPORT TITLE TEXT: TEXT (which starts with "## TITLE") replaces that section of REPORT, or is
# appended when REPORT has none (a missing REPORT starts as "# Benchmarks").
report_section() {
    python3 - "$1" "$2" "$3" <<'PY'
import re, sys
path, title, section = sys.argv[1], sys.argv[2], sys.argv[3].rstrip() + "\n"
try:
    text = open(path).read()
except FileNotFoundError:
    text = "# Benchmarks\n"
m = re.search(r"^## " + re.escape(title) + r"\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
text = text[:m.start()] + section + "\n" + text[m.end():] if m else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
PY
    echo "wrote $1"
}
