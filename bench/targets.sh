#!/bin/sh
# Every bench behind this round's targets, one after another, on one machine: the
# figures of docs/performance.md ("The latest round"). Run it on a quiet machine
# (nothing else running); it takes about 25 minutes and prints the load average
# before and after each bench. Every JSON result lands in $OUT.
#
#   . .venv/bin/activate && bench/targets.sh
#   OUT=/tmp/round3 bench/targets.sh peer_gpodder workers     # some of the benches
#
# Benches (all by default, in this order):
#   peer_gpodder     the gpodder scenarios beside oPodSync, one podsync process
#   peer_gpodder_2   the same with server.workers = 2 (oPodSync: its two PHP workers)
#   peer_opodsync_2  Open Podcast API writes beside oPodSync, server.workers = 2
#   compare          the login storm (list p99 storm / quiet), one process
#   load             list, poll and floor, the storm, sync batch (bench/load.py)
#   rss              idle RSS against bare aiohttp on the defaults, feed fetcher on
#   workers          one process against two: throughput, CPU and memory
#   startup          the binary's size, start-up and idle memory (builds it first)
#
# Environment (all optional):
#   OPODSYNC_SRC  oPodSync's source (default: tests/fixtures/opodsync, vendored)
#   PEER_DIR      the shared benches, if you have them (peer_gpodder.py,
#                 peer_opodsync.py and compare.py: not part of this repository;
#                 default: ../shared/bench beside the repository). Without them the
#                 peer_* and compare benches are left out and said so.
#   PODSYNC       the podsync command (default: `command -v podsync`)
#   OUT           where the results go (default: a new directory under /tmp)
# Needs: wrk, php-cli + php-sqlite3, and the bench extra (pip install -e '.[bench]').
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
OPODSYNC_SRC=${OPODSYNC_SRC:-$root/tests/fixtures/opodsync}
PEER_DIR=${PEER_DIR:-$root/../shared/bench}
PODSYNC=${PODSYNC:-$(command -v podsync || true)}
OUT=${OUT:-$(mktemp -d /tmp/podsync-targets-XXXXXX)}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"

fail() { echo "targets.sh: $*" >&2; exit 1; }
command -v wrk >/dev/null || fail "wrk missing (apt-get install -y wrk)"
[ -n "$PODSYNC" ] || fail "no podsync command: activate the venv (pip install -e '.[bench]')"
shared() {
    [ -f "$PEER_DIR/$1" ] && return 0
    echo "== $2 left out: $1 is one of the shared benches, not in this repository (set PEER_DIR)" >&2
    return 1
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
step() {
    name=$1
    shift
    echo "== $name (load average $(load))" >&2
    "$@" >"$OUT/$name.json" 2>"$OUT/$name.err" || {
        echo "   $name failed: see $OUT/$name.err" >&2
        return 0
    }
    echo "   done (load average $(load)): $OUT/$name.json" >&2
}

[ $# -gt 0 ] || set -- peer_gpodder peer_gpodder_2 peer_opodsync_2 compare load rss workers startup
for bench in "$@"; do
    case "$bench" in
    peer_gpodder)
        shared peer_gpodder.py "$bench" || continue
        step peer_gpodder env PODSYNC_SERVER_WORKERS=1 "$PYTHON" "$PEER_DIR/peer_gpodder.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds 3 --seconds 4 ;;
    peer_gpodder_2)
        shared peer_gpodder.py "$bench" || continue
        step peer_gpodder_2 env PODSYNC_SERVER_WORKERS=2 "$PYTHON" "$PEER_DIR/peer_gpodder.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds 3 --seconds 4 ;;
    peer_opodsync_2)
        shared peer_opodsync.py "$bench" || continue
        step peer_opodsync_2 env PODSYNC_SERVER_WORKERS=2 "$PYTHON" "$PEER_DIR/peer_opodsync.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds 3 --seconds 4 ;;
    compare)
        shared compare.py "$bench" || continue
        step compare "$PYTHON" "$PEER_DIR/compare.py" "$PODSYNC" --seconds 6 --json ;;
    load)
        step load "$PYTHON" "$here/load.py" --only list,feed,floor,storm,sync --json ;;
    rss)
        step rss "$PYTHON" "$here/load.py" --only rss --set feeds.fetch_metadata=true --json ;;
    workers)
        step workers "$PYTHON" "$here/workers.py" --json ;;
    startup)
        "$root/packaging/build.sh" >"$OUT/build.err" 2>&1 || fail "packaging/build.sh failed: $OUT/build.err"
        binary="$root/dist/podsync-linux-$(uname -m)"
        echo "== startup (load average $(load))" >&2
        "$PYTHON" "$here/startup.py" --binary "$binary" >"$OUT/startup.txt" 2>&1 || true
        echo "   done (load average $(load)): $OUT/startup.txt" >&2 ;;
    *) fail "unknown bench '$bench'" ;;
    esac
done
"$PYTHON" "$here/targets.py" "$OUT"
