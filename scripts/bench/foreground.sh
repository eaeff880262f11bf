#!/bin/bash
# Runs a benchmark as if the machine were quiet, on a machine shared with
# other work: in a session of its own whose scheduler autogroup gets nice -20
# (with autogroups on, plain `nice` only orders threads within one session,
# and every terminal or build is its own session), the command at nice -20
# inside it. Its threads then take the cores whenever they are runnable; the
# other work runs in the gaps. Needs root (a negative nice). It does not
# remove what other work leaves in the shared caches, and a VM's host still
# schedules its vCPUs as it likes: quote the load average beside the figures.
#
#   scripts/bench/foreground.sh build/vela scripts/bench/bound.lua net=mlp epochs=4 set=fashion
set -u
[ $# -ge 1 ] || { echo "usage: $0 command [args...]" >&2; exit 2; }
exec setsid -w bash -c 'echo -20 > /proc/$$/autogroup 2>/dev/null || echo "foreground.sh: could not renice the autogroup (not root?)" >&2
exec nice -n -20 "$@"' foreground "$@"
