#!/usr/bin/env bash
# Test of the ordered-restart example (see README.md): stale state planted before the start is
# removed by the cleanup oneshot; engine -> plugin -> agent start in order, each once the one
# before is ready; a crashed (SIGKILLed) plugin is deregistered by its finish hook and registered
# again after its restart, with the agent restarted after it, and no port leaks; a graceful stop
# deregisters everything (the plugin's pre_stop deletes its endpoint before its stop signal);
# after a hard kill (no hooks) the next start cleans up the leftovers.
#
# Usage: examples/ordered-restart/test.sh [docker|host|auto]     (default: auto)
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"

ex_setup ordered-restart "${1:-auto}"
ex_mount log /var/log/ctrlinit CTRLINIT_LOG_DIR
ex_mount crash /var/crash/ctrlinit CTRLINIT_CRASH_DIR
ex_mount state /var/lib/netstack STATE_DIR
ex_build

S=$WORK/state
J=$S/journal
ALL=(cleanup=completed engine=running plugin=running agent=running)
listing() { (cd "$S/$1" 2>/dev/null && ls -A | tr '\n' ' ' | sed 's/ $//'); }

# ---- 0. what a previous run left behind ----------------------------------------------------------
mkdir -p "$S/run" "$S/networks/stale-net" "$S/registry" "$S/controller/ports"
echo 99999 >"$S/run/engine.pid"
echo 99998 >"$S/run/plugin.pid"
: >"$S/run/engine.sock"
: >"$S/run/plugin.sock"
echo "plugin pid 99998" >"$S/registry/plugin"
echo "agent pid 99997" >"$S/registry/agent"
echo port-stale-1 >"$S/controller/ports/port-stale-1"
echo port-stale-2 >"$S/controller/ports/port-stale-2"

# ---- 1. start: cleanup, then the chain in order ----------------------------------------------------
ex_start
if ex_wait 30 "${ALL[@]}"; then
    pass "cleanup completed; engine, plugin and agent running"
else
    fail "the stack did not come up"
    ex_show
    ex_finish
fi
check "cleanup removed the 9 stale entries planted before the start" \
    grep -q -x "cleanup removed 9" "$J"
check "cleanup.log names what it removed (stale ports, network, pid files, sockets)" \
    sh -c 'for x in port-stale-1 port-stale-2 stale-net engine.pid engine.sock; do grep -q "removed stale .*$x" "$1" || exit 1; done' _ "$WORK/log/cleanup.log"
ports=$(listing controller/ports)
check "the controller holds exactly the plugin's fresh port ($ports)" \
    sh -c 'case $1 in port-stale*|*" "*|"") exit 1;; esac' _ "$ports"
check "no stale network left (networks: $(listing networks))" test "$(listing networks)" = contrail-net
check "engine.pid is the new engine's, not the stale 99999" test "$(cat "$S/run/engine.pid")" != 99999
check "registry: agent, engine, plugin, each registered once ($(listing registry))" \
    test "$(listing registry)" = "agent engine plugin"
ok=1
before "$J" '^cleanup removed' '^engine registered$' || ok=0
before "$J" '^engine registered$' '^plugin registered' || ok=0
before "$J" '^plugin registered' '^agent registered$' || ok=0
cl=$WORK/log/ctrlinit.log
before "$cl" ' cleanup: .*-> completed' ' engine: waiting -> starting' || ok=0
before "$cl" ' engine: starting -> running' ' plugin: waiting -> starting' || ok=0
before "$cl" ' plugin: starting -> running' ' agent: waiting -> starting' || ok=0
check "order: cleanup completed < engine ready < plugin starts, plugin ready < agent starts" test $ok = 1

# ---- 2. the plugin crashes (SIGKILL: it cannot clean up itself) -------------------------------------
port1=$ports
agent1=$(ex_pid agent)
mark=$(wc -l <"$J")
ex_ctl signal SIGKILL plugin >/dev/null
reregistered() { after_line "$J" "$mark" '^plugin registered ' && after_line "$J" "$mark" '^agent registered$'; }
if wait_for 30 reregistered && ex_wait 30 "${ALL[@]}"; then
    pass "after SIGKILL: plugin registered again, agent back"
else
    fail "plugin/agent did not come back after the crash"
    cat "$J" >&2
    ex_show
fi
tail -n +"$((mark + 1))" "$J" >"$WORK/after-crash"
A=$WORK/after-crash
check "the plugin's finish hook deregistered $port1 with the exit it saw (SIGKILL)" \
    grep -q -x "plugin deregistered $port1 (SIGKILL)" "$A"
check "deregistration came before the new registration" \
    before "$A" '^plugin deregistered ' '^plugin registered '
check "the agent (restart = true on plugin) was stopped, and deregistered, before the plugin came back" \
    before "$A" '^agent deregistered \(SIGTERM\)$' '^plugin registered '
check "the agent registered again after the new plugin" before "$A" '^plugin registered ' '^agent registered$'
check "the agent runs with a new pid" test "$(ex_pid agent)" != "$agent1"
ports=$(listing controller/ports)
check "no leaked port: the controller holds only the new port ($ports, was $port1)" \
    sh -c '[ -n "$1" ] && [ "$1" != "$2" ] && case $1 in *" "*) exit 1;; esac' _ "$ports" "$port1"
check "engine was not restarted (it does not depend on the plugin)" \
    sh -c '! grep -q "^engine" "$1"' _ "$A"
check "registry still has each program once ($(listing registry))" \
    test "$(listing registry)" = "agent engine plugin"
r=$(ex_field plugin restarts)
check "plugin restarted by policy once (restarts = $r)" test "$r" = 1

# ---- 3. graceful stop: every hook deregisters ----------------------------------------------------------
mark=$(wc -l <"$J")
ex_stop
check "stopped gracefully: exit status 0 (got $EX_EXIT)" test "$EX_EXIT" = 0
tail -n +"$((mark + 1))" "$J" >"$WORK/after-stop"
A=$WORK/after-stop
ok=1
before "$A" '^agent deregistered' '^plugin deregistered' || ok=0
before "$A" '^plugin deregistered' '^engine deregistered' || ok=0
check "stop order: agent, plugin, engine each deregistered by its finish hook" test $ok = 1
check "the plugin's pre_stop deleted its endpoint before the stop, its finish hook ran after" \
    before "$A" '^plugin draining: deleted endpoints port-' '^plugin deregistered '
check "the agent was down before the plugin's pre_stop ran (reverse order)" \
    before "$A" '^agent deregistered' '^plugin draining: '
check "a crash runs no pre_stop (the SIGKILLed plugin could not be asked): only its finish hook" \
    sh -c '! grep -q "^plugin draining" "$1"' _ "$WORK/after-crash"
check "nothing left: registry, controller ports, networks and run/ are empty" \
    test "$(listing registry)$(listing controller/ports)$(listing networks)$(listing run)" = ""

# ---- 4. a hard kill (no hooks run), then a start: the cleanup removes the leftovers ------------------
ex_start
if ex_wait 30 "${ALL[@]}"; then pass "started again"; else fail "did not start again"; ex_show; fi
leaked_port=$(listing controller/ports)
ex_kill
check "after a hard kill the registrations leak (registry: $(listing registry); ports: $leaked_port)" \
    test "$(listing registry)" = "agent engine plugin" -a -n "$leaked_port"
ex_start
if ex_wait 30 "${ALL[@]}"; then
    pass "started after the hard kill"
else
    fail "did not start after the hard kill"
    ex_show
fi
check "cleanup removed the leftovers of the killed run ($(tail -n +1 "$J" | grep '^cleanup removed' | tail -n1))" \
    sh -c '[ "$(grep "^cleanup removed" "$1" | tail -n1)" != "cleanup removed 0" ]' _ "$J"
ports=$(listing controller/ports)
check "the killed run's port $leaked_port is gone; only the new one remains ($ports)" \
    sh -c '[ -n "$1" ] && [ "$1" != "$2" ] && case $1 in *" "*) exit 1;; esac' _ "$ports" "$leaked_port"
ex_stop

ex_finish
