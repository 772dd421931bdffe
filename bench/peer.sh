#!/bin/sh
# podsync against the peer server oPodSync (PHP + SQLite, the gpodder API), same run,
# interleaved rounds: runs peer_opodsync.py of the shared benches, if you have them
# (they are not part of this repository), then prints its two ratios.
#
#   . .venv/bin/activate && bench/peer.sh                 # --rounds 3 --seconds 4
#   bench/peer.sh --rounds 5 --durability normal          # any peer_opodsync.py option
#
# Environment (all optional):
#   OPODSYNC_SRC  oPodSync's source tree (default: tests/fixtures/opodsync, vendored)
#   PEER_DIR      the shared benches, if you have them: where peer_opodsync.py and its
#                 Lua scripts live (default: ../shared/bench beside the repository)
#   PODSYNC       the podsync command (default: `command -v podsync`)
#   PYTHON        a Python with `requests` (default: python3)
#   OUT           the JSON result is also written here (default: a new temporary file)
# Needs: apt-get install -y wrk php-cli php-sqlite3
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
SRC=${OPODSYNC_SRC:-$root/tests/fixtures/opodsync}
PEER_DIR=${PEER_DIR:-$root/../shared/bench}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$(mktemp /tmp/peer-opodsync-XXXXXX.json)}
PODSYNC=${PODSYNC:-$(command -v podsync || true)}

fail() { echo "peer.sh: $*" >&2; exit 1; }

command -v wrk >/dev/null || fail "wrk missing (apt-get install -y wrk)"
command -v php >/dev/null || fail "php missing (apt-get install -y php-cli php-sqlite3)"
php -m | grep -qx sqlite3 || fail "PHP's sqlite3 extension missing (apt-get install -y php-sqlite3)"
[ -n "$PODSYNC" ] || fail "no podsync command: activate the venv (pip install -e .) or set PODSYNC"
"$PYTHON" -c "import requests" 2>/dev/null || fail "$PYTHON lacks requests (pip install requests)"
[ -f "$PEER_DIR/peer_opodsync.py" ] || fail "peer_opodsync.py not found: the shared benches are not in this repository; set PEER_DIR to where you have them"
[ -f "$SRC/server/index.php" ] || fail "no oPodSync source in $SRC (set OPODSYNC_SRC)"

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
