#!/bin/sh
# A program for the chaos suite (tests/chaos.rs). It prints numbered lines "NAME RUN SEQ PAD" to
# stdout and then the same line to a side file, so the test knows exactly which lines the program
# wrote: every line in the side file must be in ctrlinit's log file for NAME exactly once, and the
# log may hold at most one more line per run (written to stdout, killed before the side copy).
#
# usage: prog.sh NAME DIR MODES [BURST]
#   NAME   program name (also the line prefix)
#   DIR    the test directory (run/, side/, ready/, trig/ live there)
#   MODES  comma-separated: plain, ready, fork, fork2, stubborn, trigger, oneshot, slowshot,
#          termrec
#   BURST  lines per burst (one burst every 50 ms)
name=$1
dir=$2
modes=",$3,"
burst=${4:-5}
# Lines are padded to about 100 bytes: the test checks the padding arrives intact, and ctrlinit's
# per-program rings fill up early in the run (so their growth is not mistaken for a leak).
pad=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz

# Run id: a per-program counter advanced atomically (write a temporary file, rename it) before the
# first line, so every run that printed anything has its own id. $$ cannot serve: the machine's
# pid_max is small and pids wrap within a long run.
n=0
if [ -f "$dir/run/$name" ]; then read n < "$dir/run/$name"; fi
n=$((n + 1))
echo "$n" > "$dir/run/$name.tmp" && mv -f "$dir/run/$name.tmp" "$dir/run/$name"
exec 3>>"$dir/side/$name"

case $modes in *,stubborn,*) trap '' TERM ;; esac
case $modes in *,termrec,*) trap 'echo "$name" >> "$dir/term_order"; exit 0' TERM ;; esac
# Grandchildren in the program's process group, for the test to kill.
case $modes in *,fork,*) sleep 1000 & sleep 1000 & ;; esac
# A subshell that holds a grandchild of its own (a great-grandchild of ctrlinit).
case $modes in *,fork2,*) ( sleep 1000 & while :; do sleep 1; done ) & ;; esac
case $modes in *,ready,*) : > "$dir/ready/$name" ;; esac

limit=-1
case $modes in *,oneshot,*) limit=$((burst * 2)) ;; esac
case $modes in *,slowshot,*) limit=$((burst * 20)) ;; esac

i=0
while :; do
  j=0
  while [ $j -lt $burst ]; do
    echo "$name $n $i $pad"
    echo "$name $n $i $pad" >&3
    i=$((i + 1))
    j=$((j + 1))
  done
  if [ $limit -ge 0 ] && [ $i -ge $limit ]; then exit 0; fi
  case $modes in
    *,trigger,*)
      # The test writes the exit code here (atomically); exit with it once.
      if [ -f "$dir/trig/$name" ]; then
        read code < "$dir/trig/$name"
        rm -f "$dir/trig/$name"
        exit "$code"
      fi
      ;;
  esac
  # fork2 also leaves short-lived orphans for ctrlinit (PID 1) to reap.
  case $modes in *,fork2,*) (sleep 0.02 &) ;; esac
  sleep 0.05
done
