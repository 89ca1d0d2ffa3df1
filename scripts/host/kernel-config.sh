#!/usr/bin/env bash
# kernel-config.sh SRC OUT FLAVOR - write OUT/.config for FLAVOR: tinyconfig
# plus the flavor's fragments (scripts/data/kconfig/flavors) merged with
# merge_config.sh, then check that every symbol a fragment asks for made it
# into the final .config. OUT/.config is only replaced when it changes, so an
# unchanged configuration rebuilds nothing.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"

KCONFIG=$DATA_DIR/kconfig

flavor_fragments() {
	local frags
	frags=$(list_entries "$KCONFIG/flavors" | awk -v f="$1" '$1 == f { $1 = ""; print }')
	[ -n "$frags" ] || die "unknown kernel flavor '$1' (see scripts/data/kconfig/flavors)"
	for f in $frags; do
		need_file "$KCONFIG/$f" "scripts/data/kconfig/flavors names it"
		echo "$KCONFIG/$f"
	done
}

# validate_config CONFIG FRAGMENT... - every CONFIG_X=v must be in CONFIG as
# written; every "# CONFIG_X is not set" must not be set there. A symbol
# a later fragment asks for again overrides the earlier request, as in
# merge_config.sh.
validate_config() {
	local config=$1 bad
	shift
	bad=$(awk '
		FNR == NR { have[$0] = 1; next }
		/^CONFIG_[A-Za-z0-9_]+=/ { sym = $0; sub(/=.*/, "", sym) }
		/^# CONFIG_[A-Za-z0-9_]+ is not set/ { sym = $2 }
		/^CONFIG_[A-Za-z0-9_]+=/ || /^# CONFIG_[A-Za-z0-9_]+ is not set/ {
			if (!(sym in req))
				order[n++] = sym
			req[sym] = $0
			from[sym] = FILENAME
		}
		END {
			for (i = 0; i < n; i++) {
				sym = order[i]
				line = req[sym]
				if (line ~ /^CONFIG_/)
					missing = !(line in have)
				else
					missing = (sym "=y") in have || (sym "=m") in have
				if (missing)
					print "  " line " (requested in " from[sym] ")"
			}
		}' "$config" "$@" | sed "s|$KCONFIG/||")
	[ -z "$bad" ] && return 0
	printf '%s\n' "$bad" >&2
	die "the final .config lacks the symbols above (a missing dependency, or a wrong name)"
}

main() {
	help_if_asked "$@"
	[ $# -eq 3 ] || die "usage: kernel-config.sh SRC OUT FLAVOR"
	local src=$1 out=$2 flavor=$3 gen frags
	need_file "$src/Makefile" "run 'make source' first"
	mapfile -t frags < <(flavor_fragments "$flavor")
	gen=$out/.config-gen
	mkdir -p "$gen"
	make -s -C "$src" O="$gen" ARCH=x86_64 tinyconfig >/dev/null
	"$src/scripts/kconfig/merge_config.sh" -m -O "$gen" "$gen/.config" "${frags[@]}" >"$gen/merge.log" 2>&1 ||
		{ cat "$gen/merge.log" >&2; die "merge_config.sh failed"; }
	make -s -C "$src" O="$gen" ARCH=x86_64 olddefconfig >/dev/null
	validate_config "$gen/.config" "${frags[@]}"
	if ! cmp -s "$gen/.config" "$out/.config"; then
		cp "$gen/.config" "$out/.config"
		log "wrote $out/.config ($flavor: ${frags[*]##*/})"
	fi
}

main "$@"
