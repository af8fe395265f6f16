#!/usr/bin/env bash
# Start a one-node Slurm for the tests (as root): munged, then slurmctld and slurmd with a
# slurm.conf written into DIR. Prints nothing on success; exits non-zero with the reason.
# Usage: start.sh DIR     (then: SLURM_CONF=DIR/slurm.conf sbatch ...; stop.sh DIR)
set -euo pipefail
dir=$1
for cmd in munged slurmctld slurmd sbatch sinfo; do
    command -v "$cmd" >/dev/null || { echo "$cmd is not installed (Debian: apt-get install slurm-wlm munge)"; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "the test Slurm runs its daemons as root"; exit 3; }
mkdir -p "$dir/state" "$dir/spool" /run/munge
chown munge:munge /run/munge 2>/dev/null || true
if [ ! -S /run/munge/munge.socket.2 ]; then
    [ -f /etc/munge/munge.key ] || { echo "no /etc/munge/munge.key"; exit 3; }
    munged --force 2>/dev/null || { echo "munged did not start"; exit 3; }
fi
cat > "$dir/slurm.conf" <<CONF
ClusterName=opendcn-test
SlurmctldHost=localhost
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
slurmctld -f "$SLURM_CONF" || { echo "slurmctld did not start (see $dir/slurmctld.log)"; exit 3; }
slurmd -f "$SLURM_CONF" || { echo "slurmd did not start (see $dir/slurmd.log)"; exit 3; }
for _ in $(seq 1 40); do
    if sinfo -h -o %t 2>/dev/null | grep -q idle; then exit 0; fi
    sleep 0.5
done
echo "the node did not become idle within 20 s (see $dir/slurmctld.log)"
exit 3
