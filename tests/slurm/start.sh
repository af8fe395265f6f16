#!/usr/bin/env bash
# Start a one-node Slurm for the tests (as root): munged, then slurmctld and slurmd with a
# slurm.conf written into DIR, on ports free at the time (a Slurm already running on the
# machine, or another test's, keeps its own). Every step is bounded in time; prints nothing
# on success, exits 3 with the reason and the daemons' last log lines otherwise.
# Usage: start.sh DIR     (then: SLURM_CONF=DIR/slurm.conf sbatch ...; stop.sh DIR)
set -euo pipefail
dir=$1
fail() {
    echo "$1"
    for f in "$dir/slurmctld.log" "$dir/slurmd.log"; do
        [ -f "$f" ] && { echo "--- last lines of $f"; tail -n 8 "$f"; }
    done
    exit 3
}
for cmd in munge munged slurmctld slurmd sbatch sinfo; do
    command -v "$cmd" >/dev/null || { echo "$cmd is not installed (Debian: apt-get install slurm-wlm munge)"; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "the test Slurm runs its daemons as root"; exit 3; }
mkdir -p "$dir/state" "$dir/spool" /run/munge
chown munge:munge /run/munge 2>/dev/null || true
# a socket file may outlive its munged (a machine image taken with munge installed): ask it
if ! timeout 5 munge -n </dev/null >/dev/null 2>&1; then
    [ -f /etc/munge/munge.key ] || { echo "no /etc/munge/munge.key"; exit 3; }
    timeout 10 munged --force 2>/dev/null || fail "munged did not start"
    timeout 5 munge -n </dev/null >/dev/null 2>&1 || fail "munged started but does not answer"
fi
# two free TCP ports (the kernel picks them; released before the daemons bind them)
read -r ctld_port d_port < <(python3 - <<'PY'
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))
PY
)
cat > "$dir/slurm.conf" <<CONF
ClusterName=opendcn-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
MessageTimeout=5
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=localhost CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
timeout 15 slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
timeout 15 slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
    for d in slurmctld slurmd; do
        if [ -f "$dir/$d.pid" ] && ! kill -0 "$(cat "$dir/$d.pid")" 2>/dev/null; then
            fail "$d exited after starting"
        fi
    done
    state=$(timeout 6 sinfo -h -o %t 2>/dev/null || true)
    case $state in *idle*) exit 0 ;; esac
    sleep 0.5
done
fail "the node did not become idle within 30 s (last state: ${state:-no answer from slurmctld})"
