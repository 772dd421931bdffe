#!/bin/sh
# podsync against the peer server oPodSync (PHP + SQLite, the gpodder API), same run,
# interleaved rounds: sets up what /work/shared/bench/README.md describes and runs
# its peer_opodsync.py, then prints the two ratios the issue tracks.
#
#   . .venv/bin/activate && bench/peer.sh                 # --rounds 3 --seconds 4
#   bench/peer.sh --rounds 5 --durability normal          # any peer_opodsync.py option
#
# Environment (all optional):
#   OPODSYNC_SRC  oPodSync's source tree (default /tmp/opodsync); made when missing from
#   OPODSYNC_GIT  a git dir of kd2org/opodsync (e.g. one fetched beforehand), else a
#                 `git clone` of GitHub. Only commit 18095b13 is used, unpacked outside
#                 the repository: its code is never committed here.
#   PEER_DIR      where peer_opodsync.py and its Lua scripts live (/work/shared/bench)
#   PODSYNC       the podsync command (default: `command -v podsync`)
#   PYTHON        a Python with `requests` (default: python3)
#   OUT           the JSON result is also written here (default /tmp/peer-opodsync.json)
# Needs: apt-get install -y wrk php-cli php-sqlite3
set -eu

COMMIT=18095b13
SRC=${OPODSYNC_SRC:-/tmp/opodsync}
PEER_DIR=${PEER_DIR:-/work/shared/bench}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-/tmp/peer-opodsync.json}
PODSYNC=${PODSYNC:-$(command -v podsync || true)}

fail() { echo "peer.sh: $*" >&2; exit 1; }

command -v wrk >/dev/null || fail "wrk missing (apt-get install -y wrk)"
command -v php >/dev/null || fail "php missing (apt-get install -y php-cli php-sqlite3)"
php -m | grep -qx sqlite3 || fail "PHP's sqlite3 extension missing (apt-get install -y php-sqlite3)"
[ -n "$PODSYNC" ] || fail "no podsync command: activate the venv (pip install -e .) or set PODSYNC"
"$PYTHON" -c "import requests" 2>/dev/null || fail "$PYTHON lacks requests (pip install requests)"
[ -f "$PEER_DIR/peer_opodsync.py" ] || fail "$PEER_DIR/peer_opodsync.py not found (set PEER_DIR)"

if [ ! -f "$SRC/server/index.php" ]; then
    if [ -z "${OPODSYNC_GIT:-}" ]; then
        OPODSYNC_GIT=$(mktemp -d)/opodsync.git
        git clone --quiet --bare https://github.com/kd2org/opodsync "$OPODSYNC_GIT" \
            || fail "cannot clone oPodSync; fetch it and set OPODSYNC_GIT to its git dir"
    fi
    mkdir -p "$SRC"
    git --git-dir="$OPODSYNC_GIT" archive "$COMMIT" | tar -x -C "$SRC"
    echo "oPodSync $COMMIT unpacked to $SRC" >&2
fi

[ $# -gt 0 ] || set -- --rounds 3 --seconds 4
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$PYTHON" "$PEER_DIR/peer_opodsync.py" "$PODSYNC" "$SRC" "$@" > "$OUT"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PYTHON" - "$OUT" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
w, rd = r["write"], r["read"]
wr = w["ratio_podsync_over_opodsync"]["actions_per_s"]
rr = rd["ratio_podsync_over_opodsync"]["subs_delivered_per_s"]
print(f"write, 30 subscriptions a request: podsync {w['podsync']['actions_per_s_median']:,} "
      f"actions/s (p99 {w['podsync']['p99_ms_median']} ms) vs oPodSync "
      f"{w['opodsync']['actions_per_s_median']:,} (p99 {w['opodsync']['p99_ms_median']} ms): "
      f"{wr['median']}x (rounds {wr['rounds']}; target >= 1.0)")
print(f"read, a 1,000-feed list: podsync {rd['podsync']['subs_delivered_per_s_median']:,} "
      f"subscriptions/s vs oPodSync {rd['opodsync']['subs_delivered_per_s_median']:,}: "
      f"{rr['median']}x (rounds {rr['rounds']}; target >= 1.0)")
print(f"after the writes, one round: {r['read_after_writes']['ratio_subs_delivered_per_s']}x; "
      f"non-2xx: podsync {w['podsync']['non2xx'] + rd['podsync']['non2xx']}, "
      f"oPodSync {w['opodsync']['non2xx'] + rd['opodsync']['non2xx']}; full JSON in {sys.argv[1]}")
EOF
