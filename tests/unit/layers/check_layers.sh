#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The symbolizer's layering, checked on what the build made: from the
# symbols each object file defines and uses (nm),
#   1. a library calls only into libraries of lower layers (or its own), and
#   2. no object files call each other in a loop, inside a library or across.
#
# usage: check_layers.sh RANK:NAME:FILE[,FILE]...  (FILE: a static library or
#        an object file; RANK: 0 for the top layer, larger below; libraries
#        of one rank are peers and may not call each other)
set -eu

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for spec in "$@"; do
	rank=${spec%%:*}
	rest=${spec#*:}
	name=${rest%%:*}
	files=$(echo "${rest#*:}" | tr ',' ' ')
	for file in $files; do
		[ -f "$file" ] || { echo "check_layers: $file: missing" >&2; exit 2; }
	done
	# shellcheck disable=SC2086 # one word per file
	nm -A -g $files 2>/dev/null | awk -v rank="$rank" -v name="$name" '
	{
		# $1 is "file:member:VALUE" or "file:VALUE" (VALUE empty for U)
		obj = $1; sub(/:[0-9a-fA-F]*$/, "", obj)
		n = split(obj, p, ":"); sub(/.*\//, "", p[n]); obj = name "/" p[n]
		sym = $NF; type = (NF >= 3) ? $(NF - 1) : $1
		if (type == "U") print "U", obj, sym, rank, name
		else if (type ~ /^[TDBRVW]$/) print "D", obj, sym, rank, name
	}' >>"$tmp/syms"
done

awk '
$1 == "D" { def[$3] = $2; rank[$2] = $4; lib[$2] = $5 }
$1 == "U" { use[++n] = $2 " " $3; rank[$2] = $4; lib[$2] = $5 }
END {
	bad = 0
	for (i = 1; i <= n; i++) {
		split(use[i], u, " ")
		from = u[1]; s = u[2]
		if (!(s in def)) continue
		to = def[s]
		if (to == from) continue
		if (!((from, to) in seen)) {
			seen[from, to] = 1
			print from, to > "'"$tmp"'/edges"
		}
		if (lib[from] != lib[to] && rank[to] <= rank[from]) {
			printf "layering: %s (%s, layer %d) calls %s in %s (%s, layer %d)\n",
			       from, lib[from], rank[from], s, to, lib[to], rank[to]
			bad = 1
		}
	}
	exit bad
}' "$tmp/syms" || exit 1

# a loop between files shows as a cycle in the edges: tsort says so
[ -s "$tmp/edges" ] || { echo "check_layers: no calls between files found" >&2; exit 1; }
if tsort "$tmp/edges" 2>"$tmp/tsort" >/dev/null && ! [ -s "$tmp/tsort" ]; then
	echo "check_layers: $(wc -l <"$tmp/edges") calls between $(tr ' ' '\n' <"$tmp/edges" | sort -u | wc -l) files, one way, no loops"
	exit 0
fi
echo "check_layers: files that call each other in a loop:" >&2
cat "$tmp/tsort" >&2
exit 1
