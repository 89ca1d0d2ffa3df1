# shellcheck shell=dash
# shellcheck disable=SC2154  # $port and $BENCH come from bench-guest.sh
# demo-guest.sh - the guest half of make demo (busybox sh). demo.sh sends it
# as the guest command after the settings (DEMO_* variables) and
# bench-guest.sh (for $BENCH and the results $port). What it prints
# between the lines "demo-start" and "demo-end" is the demo; the JSON lines
# of uncached_bench also go to the results port for the host's summary.
FILE=/mnt/ext4/demo

say() { printf '%s\n' "$@"; }

# read_file MODE: read the file for DEMO_SECONDS in 64 KB calls.
read_file() {
	{ $BENCH -f "$FILE" -j 1 -s "$DEMO_FILESIZE" -m "$1" -o read -b 64K \
		-t "$DEMO_SECONDS" --json --label "demo/$1"; echo $? >/tmp/rc; } |
		tee -a "$port" | grep -v '^uncached-bench-'
	[ "$(cat /tmp/rc)" = 0 ] || { say "" "demo: the $1 read failed"; exit 1; }
}

# cachestat MODE: how much of the file the page cache holds after MODE.
cachestat() {
	say "" "What the page cache holds of the file now (cachestat):"
	$BENCH -f "$FILE" -j 1 --cachestat --json --label "demo/$1" |
		tee -a "$port" | grep -v '^uncached-bench-' | sed 's/^cachestat /  /'
}

intro() {
	say "" "== The setup ==" \
	"This virtual machine has $(awk '/MemTotal/ {printf "%d", $2 / 1024}' /proc/meminfo) MB of memory. The file $FILE.0 holds" \
	"$DEMO_FILESIZE_MB MB, more than the memory can hold. Each test reads it from the" \
	"start in 64 KB calls for $DEMO_SECONDS seconds, starting with an empty page cache," \
	"and prints one line per second:" \
	"  MB/sec    how much it read in that second" \
	"  cache     memory holding cached file data (the page cache)" \
	"  dirty+wb  data waiting to be written to disk (none here: we only read)" \
	"  kswapd    CPU time of kswapd, the kernel thread that frees memory, in that second" \
	"  sys       CPU time spent in the kernel in that second (both CPUs together)"
}

main() {
	echo "demo-start"
	intro
	say "" "Writing the file with O_DIRECT (it bypasses the page cache)..."
	$BENCH -f "$FILE" -j 1 -s "$DEMO_FILESIZE" --prepare || exit 1
	say "" "== 1. Buffered reads: read(), the ordinary way ==" \
	"Every page read stays in the page cache. Watch the cache column grow" \
	"until memory is full; from then on kswapd must evict old pages to make" \
	"room for new ones, it starts using CPU, and MB/sec drops." ""
	read_file buffered
	cachestat buffered
	say "" "== 2. Uncached reads: preadv2(..., RWF_UNCACHED) ==" \
	"The same reads through the page cache, but the kernel drops each page as" \
	"soon as its data has been copied to the program. The cache stays small," \
	"kswapd has nothing to do, and MB/sec no longer depends on how full" \
	"memory is." ""
	read_file uncached
	cachestat uncached
	echo "demo-end"
}

main
