#!/usr/bin/env bash
# A real Slurm on this machine (../shared/design/slurm-local.md): munge and a controller and node
# daemon on loopback, all of this test's own (its configuration, state, sockets, ports); a 4-shard
# job array plus its merge job for a small scenario and for a small sweep, submitted by
# `prismsim slurm --submit`; the merged outputs must be the unsharded ones byte for byte. The
# daemons are stopped by their PIDs. Installs slurm-wlm and munge (Debian) when missing; skips
# (exit 77) only when they cannot be installed.
# usage: slurm_test.sh PRISMSIM   (from the repository root)
set -u
prismsim=$1
skip() { echo "SKIP: $*"; exit 77; }
need_install=0
for tool in slurmctld slurmd sbatch squeue munged; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || need_install=1
done
if [ "$need_install" = 1 ]; then
  [ "$(id -u)" = 0 ] || skip "slurm-wlm and munge are not installed and installing them needs root"
  command -v apt-get >/dev/null || skip "slurm-wlm and munge are not installed and there is no apt-get"
  echo "installing slurm-wlm and munge (apt-get)"
  if ! timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge \
      >/tmp/prismsim-slurm-apt.log 2>&1; then
    timeout 300 apt-get update >/dev/null 2>&1
    timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge \
      >/tmp/prismsim-slurm-apt.log 2>&1 ||
      skip "cannot install slurm-wlm and munge: $(tail -1 /tmp/prismsim-slurm-apt.log)"
  fi
fi
[ "$(id -u)" = 0 ] || skip "the daemons of a local Slurm (SlurmUser=root) need root"
export PATH=$PATH:/usr/sbin
start=$(date +%s)

tmp=$(mktemp -d)
chmod 755 "$tmp"
S=$tmp/slurm
mkdir -p "$S"/{state,spool,log} "$S/munge"
daemons=()
cleanup() {
  local pid_file pid
  for pid_file in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/munged.pid"; do
    [ -s "$pid_file" ] || continue
    pid=$(cat "$pid_file")
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/checks.sh"

# munge: our own key, socket and pid file, run as the munge user.
dd if=/dev/urandom bs=1 count=1024 of="$S/munge/munge.key" 2>/dev/null
chown -R munge:munge "$S/munge"
chmod 755 "$S/munge"
chmod 400 "$S/munge/munge.key"
su -s /bin/sh munge -c "/usr/sbin/munged --key-file=$S/munge/munge.key \
  --socket=$S/munge/munge.socket --pid-file=$S/munge/munged.pid --log-file=$S/munge/munged.log \
  --seed-file=$S/munge/munged.seed" || skip "munged does not start"
chmod 755 "$S/munge"

# Slurm: one node, this machine, on loopback; ports of our own.
host=$(hostname)
port=$((17000 + $$ % 2000 * 2))
cat >"$S/slurm.conf" <<CONF
ClusterName=prismsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$S/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
MinJobAge=300
KillWait=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$S/slurm.conf
slurmctld -c -f "$SLURM_CONF" || skip "slurmctld does not start: $(tail -3 "$S/log/slurmctld.log")"
slurmd -c -f "$SLURM_CONF" || skip "slurmd does not start: $(tail -3 "$S/log/slurmd.log")"
for _ in $(seq 300); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.1
done
same "the node is idle" idle "${state:-none}"
[ "${state:-}" = idle ] || { tail -5 "$S/log/slurmctld.log" "$S/log/slurmd.log"; exit 1; }

# The unsharded studies, then the same through Slurm.
tiny=workloads/scenarios/tiny-gpt-h100.yaml
variability=workloads/variability/h100-all-sources.yaml
sweep=tests/cli/sweep/cartesian.yaml
run_options=(--runs 8 --set variability=$variability --deadline 200ms)
expect "unsharded run" 0 "$prismsim" run "$tiny" --out "$tmp/run-full" "${run_options[@]}" --jobs 2
expect "unsharded sweep" 0 "$prismsim" sweep "$sweep" --out "$tmp/sweep-full" --jobs 2
expect "submit the run's shards" 0 "$prismsim" slurm "$tiny" --shards 4 --out "$tmp/run" \
  --partition debug --time 5 "${run_options[@]}" --submit
same "run: submitted 4 shards and the merge" 1 "$(grep -c 'submitted 4 shard(s) as job array [0-9]* and the merge as job [0-9]*' "$tmp/out")"
expect "submit the sweep's shards" 0 "$prismsim" slurm "$sweep" --shards 4 --out "$tmp/sweep" \
  --time 5 --submit
same "sweep: submitted 4 shards and the merge" 1 "$(grep -c 'submitted 4 shard(s) as job array [0-9]* and the merge as job [0-9]*' "$tmp/out")"
for _ in $(seq 1200); do  # at most 2 minutes
  [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
  sleep 0.1
done
same "every job ended" "" "$(squeue -h -o '%i %T %r')"
for file in summary.json runs.csv; do
  same "slurm run: merged $file is the unsharded one" "" "$(cmp "$tmp/run-full/$file" "$tmp/run/$file" 2>&1)"
done
for file in sweep.csv sweep.json points/000/summary.json points/000/runs.csv \
            points/003/summary.json points/003/runs.csv; do
  same "slurm sweep: merged $file is the unsharded one" "" \
    "$(cmp "$tmp/sweep-full/$file" "$tmp/sweep/$file" 2>&1)"
done
same "each shard's log" 4 "$(ls "$tmp/run/slurm/logs" | grep -c '^shard-[1-4].out$')"
same "the merge's log says it merged" 1 "$(grep -c '^merged 4 shards' "$tmp/run/slurm/logs/merge.out")"

# Submitted again: every shard is complete, only the merge runs.
expect "resubmit the finished run" 0 "$prismsim" slurm "$tiny" --shards 4 --out "$tmp/run" \
  --time 5 "${run_options[@]}" --submit
same "only the merge is submitted" 1 "$(grep -c 'every shard is complete; submitted the merge as job' "$tmp/out")"
for _ in $(seq 600); do
  [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
  sleep 0.1
done
same "the merge ran again" 2 "$(grep -c '^merged 4 shards' "$tmp/run/slurm/logs/merge.out")"
for file in summary.json runs.csv; do
  same "slurm run, merged again: $file" "" "$(cmp "$tmp/run-full/$file" "$tmp/run/$file" 2>&1)"
done
if [ "$failed" -gt 0 ]; then
  for log in "$tmp"/run/slurm/logs/* "$tmp"/sweep/slurm/logs/*; do
    echo "== $log"; tail -5 "$log"
  done
  tail -20 "$S/log/slurmctld.log"
fi
echo "slurm test: $(( $(date +%s) - start )) s with the daemons"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
