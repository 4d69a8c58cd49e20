# shellcheck shell=bash disable=SC2034
# Shared by the deploy/gcp scripts: messages, argument checks and the --dry-run switch. Sourced, not run.
# (SC2034 is off: the *_RE patterns at the end are used by the scripts that source this file.)

DRY_RUN=0

die() {
	echo "$(basename "$0"): $*" >&2
	exit 2
}

# run CMD ARGS...: prints the command (after "+ ", quoting only words that need it); runs it unless --dry-run.
run() {
	local a line="+"
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then
			line+=" $a"
		else
			line+=" $(printf '%q' "$a")"
		fi
	done
	echo "$line"
	if [ "$DRY_RUN" = 1 ]; then
		return 0
	fi
	"$@"
}

# need_value OPTION "$@": fails unless the option is followed by a non-empty value.
need_value() {
	if [ "$#" -lt 2 ] || [ -z "$2" ]; then
		die "$1 needs a value"
	fi
}

# check NAME VALUE REGEX: fails unless VALUE matches REGEX (bash ERE), so no odd text reaches a command line.
check() {
	if ! [[ $2 =~ $3 ]]; then
		die "invalid $1: '$2'"
	fi
}

# The project from --project, else gcloud's configured one.
resolve_project() {
	local p=$1
	if [ -z "$p" ]; then
		p=$(gcloud config get-value project 2>/dev/null || true)
	fi
	if [ -z "$p" ]; then
		die "no project: pass --project or run 'gcloud config set project PROJECT'"
	fi
	check project "$p" '^[a-z][-a-z0-9]{4,28}[a-z0-9]$'
	echo "$p"
}

NAME_RE='^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$'
ZONE_RE='^[a-z]+-[a-z]+[0-9]+-[a-z]$'
REGION_RE='^[a-z]+-[a-z]+[0-9]+$'
TYPE_RE='^[a-z0-9][-a-z0-9_.]*$'
COUNT_RE='^[1-9][0-9]{0,2}$'
URL_RE='^(https://|git@)[A-Za-z0-9._~:/@%+-]+$'
REF_RE='^[A-Za-z0-9._/-]+$'
CIDR_RE='^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$'
