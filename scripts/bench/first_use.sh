#!/bin/bash
# Time to the first mm on a Vulkan device in a new process, with empty caches
# (vela's and Mesa's under a private XDG_CACHE_HOME, removed) and warm ones
# (the run right after), alternating for each binary given, interleaved.
# Each round also prints the driver floor: the same driver opened by a
# process that does nothing else (vk_open_floor.c), which no first mm beats.
#
#   scripts/bench/first_use.sh [rounds=2] [device=vulkan:0] BINARY...   (VK_ICD_FILENAMES picks the driver)
set -u
rounds=${1:-2} dev=${2:-vulkan:0}; shift 2 || true
[ $# -gt 0 ] || set -- build/vela
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=$(mktemp -d)
floor="$cache/.floor"
cc -O2 -o "$floor" "$here/scripts/bench/vk_open_floor.c" -lvulkan 2>/dev/null || floor=
echo "uptime before: $(uptime)"
for r in $(seq "$rounds"); do
  [ -n "$floor" ] && "$floor"
  for bin in "$@"; do
    for mode in empty warm; do
      [ "$mode" = empty ] && rm -rf "$cache"/*
      line=$(XDG_CACHE_HOME=$cache "$bin" "$here/scripts/bench/first_use.lua" "$dev" 2>&1 | tail -1)
      echo "$bin $mode: $line"
    done
  done
done
echo "uptime after: $(uptime)"
rm -rf "$cache"
