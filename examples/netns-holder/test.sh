#!/usr/bin/env bash
# Test of the netns-holder example (see README.md): kill the holder; its dependents are stopped,
# and started again only after the holder is ready again (in dependency order), never against a
# dead holder; a plain dependent keeps running; the restarts do not count against budgets.
#
# Usage: examples/netns-holder/test.sh [docker|host|auto]     (default: auto)
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"

ex_setup netns-holder "${1:-auto}"
ex_mount log /var/log/ctrlinit CTRLINIT_LOG_DIR
ex_mount crash /var/crash/ctrlinit CTRLINIT_CRASH_DIR
ex_mount netns /run/netns NETNS_DIR
ex_build

J=$WORK/netns/journal
ALL=(holder=running web=running cache=running proxy=running logger=running)

ex_start
if ex_wait 30 "${ALL[@]}"; then
    pass "holder, web, cache, proxy and logger running"
else
    fail "the example did not come up"
    ex_show
    ex_finish
fi
joined() { grep -q -x "$1 joined $2" "$J"; }
all_joined() { joined web "$1" && joined cache "$1" && joined proxy "$1"; }
check "web, cache and proxy joined netns-1 after the holder created it" \
    sh -c 'grep -n . "$1" | head -n1 | grep -q "holder up netns-1"' _ "$J"
# (cache has no readiness check: `running` once spawned, its journal line may follow shortly)
check "every task recorded netns-1" wait_for 10 all_joined netns-1
logger_pid=$(ex_pid logger)

# ---- 1. the holder dies (SIGKILL: no chance to clean up) ----------------------------------------
ex_ctl signal SIGKILL holder >/dev/null
if wait_for 30 all_joined netns-2 && ex_wait 30 "${ALL[@]}"; then
    pass "after SIGKILL of the holder: netns-2 created, web, cache and proxy rejoined it"
else
    fail "the tasks did not come back inside netns-2"
    cat "$J" >&2
    ex_show
fi
down=$(line_of "$J" '^holder down SIGKILL$')
up2=$(line_of "$J" '^holder up netns-2$')
check "the finish hook saw the holder's SIGKILL and removed the namespace" test -n "$down"
ok=1
for t in web cache proxy; do
    before "$J" "^$t left netns-1\$" "^holder up netns-2\$" || ok=0
    before "$J" '^holder up netns-2$' "^$t joined netns-2\$" || ok=0
done
check "each task left netns-1 before the new holder was up, and joined netns-2 after it was ready" test $ok = 1
check "proxy (needs web ready) joined netns-2 after web" \
    before "$J" '^web joined netns-2$' '^proxy joined netns-2$'
check "no task ever started against a dead holder (no 'failed' in the journal)" \
    sh -c '! grep -q failed "$1"' _ "$J"
check "logger (plain dependency) kept running with the same pid" test "$(ex_pid logger)" = "$logger_pid"
r=$(ex_field web restarts)
f=$(ex_field web forced_restarts)
check "web's restart was forced by the holder, not counted against its budget (restarts $r, forced $f)" \
    test "$r" = 0 -a "$f" -ge 1
r=$(ex_field holder restarts)
check "the holder itself was restarted by policy (restarts = $r)" test "$r" = 1

# ---- 2. restarted by hand: the same, in order -----------------------------------------------------
ex_ctl restart holder >/dev/null
if wait_for 30 all_joined netns-3 && ex_wait 30 "${ALL[@]}"; then
    pass "ctrlinit restart holder: web, cache and proxy rejoined netns-3"
else
    fail "the tasks did not come back inside netns-3"
    cat "$J" >&2
fi
ok=1
for t in web cache proxy; do
    before "$J" "^$t left netns-2\$" '^holder up netns-3$' || ok=0
    before "$J" '^holder up netns-3$' "^$t joined netns-3\$" || ok=0
done
check "restart by hand: tasks left netns-2 before netns-3 existed, joined it after" test $ok = 1
ok=1
before "$J" '^proxy left netns-2$' '^web left netns-2$' || ok=0
before "$J" '^web joined netns-3$' '^proxy joined netns-3$' || ok=0
check "restart by hand: proxy left before web (reverse order), joined after it" test $ok = 1

# ---- 3. docker stop: tasks leave before the holder goes ------------------------------------------
ex_stop
check "stopped gracefully: exit status 0 (got $EX_EXIT)" test "$EX_EXIT" = 0
n=$(wc -l <"$J")
last=$(tail -n1 "$J")
check "at shutdown every task left netns-3 before the holder went down (last: $last)" \
    sh -c 'for t in web cache proxy; do grep -q -x "$t left netns-3" "$1" || exit 1; done; [ "$2" = "holder down SIGTERM" ]' _ "$J" "$last"
check "at shutdown proxy left before web (reverse dependency order)" \
    before "$J" '^proxy left netns-3$' '^web left netns-3$'
say "journal ($n lines):"
sed 's/^/    /' "$J" >&2

ex_finish
