#!/usr/bin/env bash
# Stop the test Slurm started by start.sh DIR and wait for its daemons to exit (munged is
# left running).
dir=$1
pids=()
for d in slurmd slurmctld; do
    if [ -f "$dir/$d.pid" ]; then
        pid=$(cat "$dir/$d.pid")
        kill "$pid" 2>/dev/null && pids+=("$pid")
    fi
done
for _ in $(seq 1 50); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && exit 0
    sleep 0.2
done
exit 0
