#!/usr/bin/env bash
# Test of the role-container example (see README.md): provisioning from env, idempotent across
# restarts; services in dependency order; logs and a crash (report + core) on the host mounts;
# the container ends with exit code 75 when one service keeps failing.
#
# Usage: examples/role-container/test.sh [docker|host|auto]     (default: auto)
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"

ex_setup role-container "${1:-auto}"
ex_mount log /var/log/ctrlinit CTRLINIT_LOG_DIR
ex_mount crash /var/crash/ctrlinit CTRLINIT_CRASH_DIR
ex_mount conf /etc/role ROLE_CONF
ex_mount run /run/role ROLE_RUN
ex_host_env ROLE_HOME="$EX_DIR"
ex_host_env ROLE_USER=root # the image has a user `app`; on the host the services run as root
ex_build

if [ "$EX_MODE" = docker ]; then user=app; else user=root; fi
L=$WORK/log
C=$WORK/conf

# ---- 1. first start: provisioning from env, ordered start, a crash on the host mount ----------
ex_start API_PORT=9100 DB_NODES=10.0.0.1:9042,10.0.0.2:9042 LOG_LEVEL=SYS_DEBUG ROLE_CRASH_ONCE=monitor
if ex_wait 30 provision=completed api=running schema=running monitor=running; then
    pass "role up: provision completed; api, schema and monitor running"
else
    fail "role did not come up"
    ex_show
    ex_finish
fi
check "ctrlinit health says healthy" quiet ex_ctl health
check "api.conf rendered from the environment (port, db nodes, log level)" \
    grep -q -x 'listen_port = 9100' "$C/api.conf"
check "schema.conf lists every DB_NODES entry" \
    grep -q -x 'cassandra_server_list = 10.0.0.1:9042 10.0.0.2:9042' "$C/schema.conf"
check "monitor.conf carries LOG_LEVEL" grep -q -x 'log_level = SYS_DEBUG' "$C/monitor.conf"

cl=$L/ctrlinit.log
# ctrlinit.log lines: "<time> INFO  api: waiting -> starting"
if before "$cl" ' provision: .*-> completed' ' api: waiting -> starting' &&
    before "$cl" ' api: starting -> running' ' schema: waiting -> starting' &&
    before "$cl" ' schema: starting -> running' ' monitor: waiting -> starting'; then
    pass "start order: provision completed < api ready < schema starts, schema ready < monitor starts"
else
    fail "start order wrong in ctrlinit.log"
    grep -E -- '-> (starting|running|completed)' "$cl" >&2 || true
fi

missing=
for p in provision api schema monitor ctrlinit; do
    [ -s "$L/$p.log" ] || missing="$missing $p.log"
done
grep -q 'wrote .*/api.conf' "$L/provision.log" 2>/dev/null || missing="$missing provision.log(wrote)"
grep -q "api: starting as $user" "$L/api.log" 2>/dev/null || missing="$missing api.log(as $user)"
if [ -z "$missing" ]; then
    pass "host-mounted log dir: a file per program and ctrlinit.log (services ran as $user)"
else
    fail "host-mounted log dir lacks:$missing"
fi
console=$(ex_console)
missing=
for p in provision api schema monitor ctrlinit; do
    printf '%s\n' "$console" | grep -q -E "^$p +\| " || missing="$missing $p"
done
printf '%s\n' "$console" | grep -q -E '^monitor +! monitor: segfaulting once' || missing="$missing monitor(stderr)"
if [ -z "$missing" ]; then
    pass "console (docker logs) has prefixed lines of every program"
else
    fail "console lacks prefixed lines of:$missing"
fi

# The report is written off the restart path (after the crashed run's pipes drain), so it may
# land after monitor is running again: poll for it.
has_report() { grep -l -s 'segfaulting once' "$WORK/crash/monitor/"*-SIGSEGV.json >/dev/null; }
wait_for 10 has_report || true
report=$(ls "$WORK/crash/monitor/"*-SIGSEGV.json 2>/dev/null | head -n1 || true)
if [ -n "$report" ] && grep -q 'segfaulting once' "$report"; then
    pass "crash of monitor: report $(basename "$report") on the host mount, with its last lines"
else
    fail "no crash report for monitor in the host-mounted crash dir"
fi
case $(cat /proc/sys/kernel/core_pattern) in
'|'*) pass "core_pattern pipes cores to the host: report only" ;;
*) check "crash of monitor: its core file is on the host mount next to the report" \
    wait_for 10 sh -c 'ls "$1"/*.core >/dev/null 2>&1' _ "$WORK/crash/monitor" ;;
esac
r=$(ex_field monitor restarts)
check "monitor restarted once after its crash and runs (restarts = $r)" test "$r" = 1

# ---- 2. idempotent provisioning -----------------------------------------------------------------
fingerprint() { (cd "$C" && for f in api.conf schema.conf monitor.conf; do
    printf '%s %s\n' "$(cksum <"$f")" "$(stat -c %Y.%y "$f")"
done); }
first=$(fingerprint)

# a) provisioning run again in place (it restarts the services that depend on it)
ex_ctl restart provision >/dev/null
if ex_wait 30 provision=completed api=running schema=running monitor=running; then
    pass "ctrlinit restart provision: provisioning ran again, services back"
else
    fail "services did not come back after restarting provision"
    ex_show
fi
check "second provisioning run: same bytes and same mtimes" test "$(fingerprint)" = "$first"
check "second provisioning run reported every file unchanged" \
    test "$(grep -c 'unchanged' "$L/provision.log")" -eq 3

# b) the container restarted, same environment
ex_restart
if ex_wait 30 provision=completed api=running schema=running monitor=running; then
    pass "container restart: role up again"
else
    fail "role did not come up after a container restart"
    ex_show
fi
check "after a container restart: same bytes and same mtimes" test "$(fingerprint)" = "$first"
check "third provisioning run reported every file unchanged" \
    test "$(grep -c 'unchanged' "$L/provision.log")" -eq 6

ex_stop
check "stopped gracefully: exit status 0 (got $EX_EXIT)" test "$EX_EXIT" = 0

# ---- 3. one service keeps failing → the container exits with 75 ----------------------------------
ex_start API_PORT=9200 DB_NODES=10.0.0.1:9042 ROLE_FAIL_SERVICE=schema
if ex_wait_exit 60; then
    check "schema keeps failing: the container exits with exit_code 75 (got $EX_EXIT)" test "$EX_EXIT" = 75
else
    fail "the container did not exit while schema kept failing"
    ex_show
fi
console=$(ex_console)
runs=$(printf '%s\n' "$console" | grep -c -E '^schema +! schema: cannot connect' || true)
check "schema ran 4 times (max_restarts = 3) before the budget ran out (got $runs)" test "$runs" = 4
check "ctrlinit said schema exhausted its budget" \
    sh -c 'printf "%s\n" "$1" | grep -q -E "schema.*exhausted"' _ "$console"
check "monitor never started against a failing schema" \
    sh -c '! printf "%s\n" "$1" | grep -q -E "^monitor +\|"' _ "$console"
check "api was stopped before the exit" \
    sh -c 'printf "%s\n" "$1" | grep -q -E "api: .*-> stopped"' _ "$console"
check "provisioning applied the new environment (listen_port = 9200)" \
    grep -q -x 'listen_port = 9200' "$C/api.conf"

ex_finish
