#!/bin/sh
# Every bench behind this round's targets, one after another, on one machine, podsync
# beside oPodSync in the same run: the figures of docs/performance.md ("The latest
# round"). Run it on a quiet machine (nothing else running); all of it takes about
# 35 minutes. It notes the load average before and after each bench, and ends with
# bench/targets.py's table: the write targets first, each bench's non-2xx answers
# (podsync / oPodSync) and the load averages. Every JSON result lands in $OUT.
#
# The side-by-side benches (peer_gpodder.py, peer_opodsync.py, compare.py with its
# bare_server.py, heavy_user.py) are not part of this repository: name their folder
# (by default ../shared/bench beside it).
#
#   . .venv/bin/activate && bench/targets.sh --shared DIR
#   PEER_DIR=DIR OUT=/tmp/round4 bench/targets.sh peer_gpodder load   # some of them
#   bench/targets.sh --shared DIR --smoke peer_gpodder      # 1 round of 1 s: does it run?
#
# Benches (all by default, in this order):
#   peer_gpodder     the gpodder scenarios beside oPodSync, one podsync process
#   peer_gpodder_2   the same with server.workers = 2 (oPodSync: its two PHP workers)
#   peer_opodsync_2  Open Podcast API writes beside oPodSync, server.workers = 2
#   compare          the login storm (list p99 storm / quiet), one process
#   load             list, poll and floor, the storm, sync batch (bench/load.py)
#   rss              idle RSS against bare aiohttp on the defaults, feed fetcher on
#   heavy_user       one account of 200,000 episode actions beside oPodSync, HEAVY_RUNS
#                    times (the fill's ratio moves run to run: targets.py takes the median)
#   workers          one process against two: throughput, CPU and memory
#   postgres         the sync batch on PostgreSQL against SQLite, on a durable cluster of
#                    its own (bench/pg_sync.py); left out without PostgreSQL's server
#   startup          the binary's size, start-up and idle memory (builds it first)
#
# Environment (all optional):
#   PEER_DIR      the side-by-side benches' folder, if you have them (also
#                 SHARED_BENCH, or --shared DIR; default: ../shared/bench beside the
#                 repository). Without them the peer_*, compare and heavy_user
#                 benches are left out and said so.
#   OPODSYNC_SRC  oPodSync's source (default: tests/fixtures/opodsync, vendored)
#   PODSYNC       the podsync command (default: `command -v podsync`)
#   OUT           where the results go (default: a new directory under /tmp)
#   HEAVY_RUNS    how many times heavy_user runs (default 3; --smoke: 1)
#   SETTLE_LOAD   before each bench, wait until the one-minute load average is under
#                 this (default 0.7), so that no bench starts in the last one's wake
#   SETTLE_MAX    ... but at most this many seconds (default 180; --smoke: 0); a wait
#                 is noted beside the bench's load averages
# Needs: wrk, php-cli + php-sqlite3, and the bench extra (pip install -e '.[bench]'); the
# postgres bench also PostgreSQL's server and the test extra (its cluster is the tests').
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
fail() { echo "targets.sh: $*" >&2; exit 1; }

PEER_DIR=${PEER_DIR:-${SHARED_BENCH:-$root/../shared/bench}}
# Rounds and seconds of the side-by-side benches (--smoke: one short round each).
ROUNDS=3
SECONDS_EACH=4
PG_RUNS=3
HEAVY_ACTIONS=200000
HEAVY_RUNS=${HEAVY_RUNS:-3}
SETTLE_LOAD=${SETTLE_LOAD:-0.7}
SETTLE_MAX=${SETTLE_MAX:-180}
while [ $# -gt 0 ]; do
    case "$1" in
    --shared) [ $# -ge 2 ] || fail "--shared needs a folder"; PEER_DIR=$2; shift 2 ;;
    --smoke) ROUNDS=1; SECONDS_EACH=1; HEAVY_ACTIONS=2000; HEAVY_RUNS=1; PG_RUNS=1; SETTLE_MAX=0; shift ;;
    --*) fail "unknown option '$1'" ;;
    *) break ;;
    esac
done
OPODSYNC_SRC=${OPODSYNC_SRC:-$root/tests/fixtures/opodsync}
PODSYNC=${PODSYNC:-$(command -v podsync || true)}
OUT=${OUT:-$(mktemp -d /tmp/podsync-targets-XXXXXX)}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"

command -v wrk >/dev/null || fail "wrk missing (apt-get install -y wrk)"
[ -n "$PODSYNC" ] || fail "no podsync command: activate the venv (pip install -e '.[bench]')"
[ -f "$OPODSYNC_SRC/server/index.php" ] || fail "no oPodSync in $OPODSYNC_SRC: set OPODSYNC_SRC"
shared() {
    [ -f "$PEER_DIR/$1" ] && return 0
    echo "== $2 left out: $1 is one of the shared benches, not in this repository (set PEER_DIR)" >&2
    echo "$2|-|-|left out|" >>"$OUT/load.txt"
    return 1
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
# One line per bench in $OUT/load.txt: its name, the load average before and after.
: >"$OUT/load.txt"
# Wait (at most SETTLE_MAX s) for the one-minute load average to fall under SETTLE_LOAD.
settle() {
    waited=0
    while [ "$waited" -lt "$SETTLE_MAX" ] &&
        awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v t="$SETTLE_LOAD" 'BEGIN { exit !(l >= t) }'; do
        sleep 5
        waited=$((waited + 5))
    done
    waited_note=""
    [ "$waited" -eq 0 ] || waited_note="waited $waited s to settle"
    [ -z "$waited_note" ] || echo "   $waited_note" >&2
}
step() {
    name=$1
    shift
    settle
    before=$(load)
    echo "== $name (load average $before)" >&2
    "$@" >"$OUT/$name.json" 2>"$OUT/$name.err" || {
        echo "   $name failed: see $OUT/$name.err" >&2
        echo "$name|$before|$(load)|failed${waited_note:+; $waited_note}" >>"$OUT/load.txt"
        return 0
    }
    echo "$name|$before|$(load)|$waited_note" >>"$OUT/load.txt"
    echo "   done (load average $(load)): $OUT/$name.json" >&2
}

[ $# -gt 0 ] || set -- peer_gpodder peer_gpodder_2 peer_opodsync_2 compare load rss heavy_user \
    workers postgres startup
for bench in "$@"; do
    case "$bench" in
    peer_gpodder)
        shared peer_gpodder.py "$bench" || continue
        step peer_gpodder env PODSYNC_SERVER_WORKERS=1 "$PYTHON" "$PEER_DIR/peer_gpodder.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds "$ROUNDS" --seconds "$SECONDS_EACH" ;;
    peer_gpodder_2)
        shared peer_gpodder.py "$bench" || continue
        step peer_gpodder_2 env PODSYNC_SERVER_WORKERS=2 "$PYTHON" "$PEER_DIR/peer_gpodder.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds "$ROUNDS" --seconds "$SECONDS_EACH" ;;
    peer_opodsync_2)
        shared peer_opodsync.py "$bench" || continue
        step peer_opodsync_2 env PODSYNC_SERVER_WORKERS=2 "$PYTHON" "$PEER_DIR/peer_opodsync.py" \
            "$PODSYNC" "$OPODSYNC_SRC" --rounds "$ROUNDS" --seconds "$SECONDS_EACH" ;;
    compare)
        shared compare.py "$bench" || continue
        step compare "$PYTHON" "$PEER_DIR/compare.py" "$PODSYNC" --seconds "$((SECONDS_EACH + 2))" --json ;;
    load)
        step load "$PYTHON" "$here/load.py" --only list,feed,floor,storm,sync --json \
            --rounds "$ROUNDS" --seconds "$SECONDS_EACH" ;;
    rss)
        step rss "$PYTHON" "$here/load.py" --only rss --set feeds.fetch_metadata=true --json ;;
    heavy_user)
        shared heavy_user.py "$bench" || continue
        # heavy_user.json, then heavy_user-2.json, ... (each run both servers anew)
        run=1
        while [ "$run" -le "$HEAVY_RUNS" ]; do
            name=heavy_user
            [ "$run" -eq 1 ] || name=heavy_user-$run
            step "$name" env PODSYNC_SERVER_WORKERS=1 "$PYTHON" "$PEER_DIR/heavy_user.py" \
                "$PODSYNC" "$OPODSYNC_SRC" --actions "$HEAVY_ACTIONS" --json
            run=$((run + 1))
        done ;;
    workers)
        step workers "$PYTHON" "$here/workers.py" --json ;;
    postgres)
        if ! why=$("$PYTHON" "$here/pg_sync.py" --check 2>&1); then
            echo "== postgres left out: $why" >&2
            echo "postgres|-|-|left out|" >>"$OUT/load.txt"
            continue
        fi
        step postgres "$PYTHON" "$here/pg_sync.py" --json --runs "$PG_RUNS" \
            --rounds "$ROUNDS" --seconds "$SECONDS_EACH" ;;
    startup)
        "$root/packaging/build.sh" >"$OUT/build.err" 2>&1 || fail "packaging/build.sh failed: $OUT/build.err"
        binary="$root/dist/podsync-linux-$(uname -m)"
        settle
        echo "== startup (load average $(load))" >&2
        "$PYTHON" "$here/startup.py" --binary "$binary" >"$OUT/startup.txt" 2>&1 || true
        echo "   done (load average $(load)): $OUT/startup.txt" >&2 ;;
    *) fail "unknown bench '$bench'" ;;
    esac
done
"$PYTHON" "$here/targets.py" "$OUT"
