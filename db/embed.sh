#!/bin/sh
# Writes a C header embedding the numbered migrations given as arguments (db/migrations/NNNN_name.sql, in order).
# Each migration becomes an array of lines, because one long string literal would pass C's 4095-byte minimum.
set -eu
echo '/* generated from db/migrations by db/embed.sh; do not edit */'
i=0
for f in "$@"; do
	i=$((i + 1))
	echo "static const char *const migration_${i}_lines[] = {"
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' -e 's/^/	"/' -e 's/$/\\n",/' "$f"
	echo '	NULL};'
done
echo 'static const struct store_migration store_migrations[] = {'
i=0
for f in "$@"; do
	i=$((i + 1))
	base=$(basename "$f")
	num=$(expr "${base%%_*}" + 0)
	echo "	{${num}, \"${base}\", migration_${i}_lines},"
done
echo '};'
