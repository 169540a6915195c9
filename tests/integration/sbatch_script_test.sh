#!/bin/sh
# usage: sbatch_script_test.sh PHALANXD PHALANX_AGENT GSUB GQ GINFO GCANCEL
# A Slurm user's script through gsub on real agents (docs/user-guide.md, "Coming from Slurm"):
#   1. "#SBATCH --gpus=2 -J x -o x-%j.out" runs on 2 GPUs under the name x, writes x-<id>.out,
#      and the job sees the SLURM_* variables; gsub -W waits and exits with the job's code.
#   2. -w/--nodelist and -x/--exclude decide the node (hostlist syntax).
#      --mail-type is recorded and phalanxd logs that mail is not configured.
#   3. An unsupported #SBATCH option is a warning naming script:line; --deadline is refused.
#   4. --begin=now+1hour keeps the job pending with reason BeginTime.
set -u
phalanxd=$1 agent=$2 gsub=$3 gq=$4 ginfo=$5 gcancel=$6
. "$(dirname "$0")/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$gcancel

start_daemon "$phalanxd"
start_agents "$agent" 4
wait_nodes_up "$ginfo" 4
export PHALANX_SOCKET=$sock
mkdir "$dir/work"
cd "$dir/work" || fail "cd"

# 1. The issue's script, waited for with -W (exit code 3 from the script).
cat >job.sh <<'SCRIPT'
#!/bin/sh
#SBATCH --gpus=2 -J x -o x-%j.out
#SBATCH --licenses=matlab:1
#SBATCH -c 4 --mem=8G --comment "from slurm" --mail-type=END --mail-user=ada@example.org
env | grep -E '^(SLURM_|CUDA_VISIBLE_DEVICES=)' | sort
exit 3
SCRIPT
"$gsub" -W job.sh >submit.out 2>submit.err
rc=$?
[ "$rc" = 3 ] || { cat submit.out submit.err; fail "gsub -W exited $rc, not the job's 3"; }
grep -q "^gsub: warning: job.sh:3: #SBATCH --licenses: ignored" submit.err || { cat submit.err; fail "no warning naming job.sh:3"; }
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' submit.out)
[ -n "$id" ] || { cat submit.out; fail "no job id"; }
[ -f "x-$id.out" ] || { ls; fail "no x-$id.out"; }
out=x-$id.out
grep -q "job $id: mail-type END recorded; mail is not configured" "$dir/phalanxd.log" || fail "phalanxd did not log the unsent mail"
want() { grep -qx "$1" "$out" || { cat "$out"; fail "job output lacks '$1'"; }; }
want "SLURM_JOB_ID=$id"
want "SLURM_JOBID=$id"
want "SLURM_JOB_NAME=x"
want "SLURM_NNODES=1"
want "SLURM_NODEID=0"
want "SLURM_PROCID=0"
want "SLURM_LOCALID=0"
want "SLURM_NTASKS=1"
want "SLURM_GPUS_ON_NODE=2"
want "SLURM_CPUS_PER_TASK=4"
want "SLURM_MEM_PER_NODE=8192"
want "SLURM_SUBMIT_DIR=$dir/work"
want "SLURM_JOB_USER=$(id -un)"
want "SLURM_JOB_PARTITION=default"
grep -q '^SLURM_JOB_NODELIST=node[0-3]$' "$out" || { cat "$out"; fail "SLURM_JOB_NODELIST"; }
grep -q '^SLURM_CLUSTER_NAME=.' "$out" || { cat "$out"; fail "SLURM_CLUSTER_NAME"; }
grep -q '^SLURM_SUBMIT_HOST=.' "$out" || { cat "$out"; fail "SLURM_SUBMIT_HOST"; }
[ "$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$out" | tr ',' '\n' | wc -l)" = 2 ] || { cat "$out"; fail "not 2 GPUs"; }
[ "$(sed -n 's/^SLURM_JOB_GPUS=//p' "$out")" = "$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$out")" ] ||
  { cat "$out"; fail "SLURM_JOB_GPUS is not the job's GPUs"; }
name=$("$gq" -j "$id" -o '%j' --noheader) || fail "gq -j $id"
[ "$name" = x ] || fail "job $id is named '$name', not x"

# 2. -w and -x with hostlists: the job lands where they say.
"$gsub" -W -G 8 -w 'node[2-3]' -x node3 -o w.out --wrap 'echo "on=$PHALANX_NODE nodes=$SLURM_JOB_NODELIST"' >/dev/null ||
  fail "gsub -w -x"
grep -qx "on=node2 nodes=node2" w.out || { cat w.out; fail "-w 'node[2-3]' -x node3 did not run on node2"; }

# 3. --deadline is refused before anything is sent, naming the line.
printf '#!/bin/sh\n#SBATCH --deadline=now+1hour\ntrue\n' >dl.sh
"$gsub" dl.sh 2>dl.err && fail "a --deadline script was accepted"
grep -q "dl.sh:2: #SBATCH --deadline: not supported" dl.err || { cat dl.err; fail "the --deadline refusal does not name dl.sh:2"; }

# 4. --begin: pending with reason BeginTime.
bid=$("$gsub" --parsable --begin now+1hour --wrap true) || fail "gsub --begin"
pending_begin() { [ "$("$gq" -j "$bid" -o '%T %r' --noheader 2>/dev/null)" = "PENDING BeginTime" ]; }
deadline 10 pending_begin || { "$gq" -j "$bid" -l; fail "job $bid is not pending with reason BeginTime"; }
"$gcancel" "$bid" >/dev/null || fail "gcancel $bid"
echo "sbatch_script_test: ok"
