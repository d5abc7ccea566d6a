#!/usr/bin/env bash
# The main job, from a fresh Debian machine, in one command:
#
#  1. set up Python (deploy/setup.sh) and bring up the local Slurm + Redis testbed with the
#     adaptalloc daemon (deploy/local/up.sh --with-daemon) in advise mode, its policy asking
#     for 80% efficiency (.local/demo/policy.toml: on 8 nodes most real curves stay
#     efficient at the default 50%, and the demo should show the sizes differ); the learner
#     is off, so both runs below are decided from the same history;
#  2. import real strong-scaling studies (tests/data/scaling/) as the history of four
#     applications, lu, hpc2, spm and cs267, their runtimes scaled to demo seconds
#     (T(1) = 16 s), and fit their curves;
#  3. run A, advise: submit a burst of 9 moldable jobs (sbatch --nodes=1-8) tagged with those
#     apps (and one app nobody has seen), whose scripts sleep for the runtime their app's
#     curve gives at $SLURM_NNODES: nothing is held, Slurm sizes them, the daemon records what
#     it would have done;
#  4. run B, enforce: switch the daemon to enforce with a SIGHUP (no restart) and submit the
#     same burst: the daemon holds, sizes and releases each one;
#  5. print, from sacct, mean turnaround, mean wait, makespan and node-hours of both runs side
#     by side, job by job what each got, and write the same numbers to .local/demo/ab.json
#     (deploy/demo_ab.py); then where the reports are.
#
# Idempotent: re-running imports nothing twice and submits a fresh workload. The daemon is
# stopped again at the end so that the testbed is quiet for deploy/test.sh (--keep-daemon
# leaves it running: deploy/local/down.sh --daemon-only stops it later).

SCRIPT_NAME=demo.sh
# shellcheck source=local/lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/local/lib.sh"

usage() {
    echo "usage: deploy/demo.sh [--state-dir DIR] [--keep-daemon]   (see the comment at the top)"
}
parse_common_args "$@"
KEEP_DAEMON=0
for arg in "${REST_ARGS[@]+"${REST_ARGS[@]}"}"; do
    case "$arg" in
        --keep-daemon) KEEP_DAEMON=1 ;;
        *) die "unknown argument: $arg (see --help)" ;;
    esac
done

T0=$SECONDS
DEMO="$STATE_DIR/demo"
mkdir -p "$DEMO"
printf '[defaults]\nefficiency_threshold = 0.8\n' >"$DEMO/policy.toml"
# The daemon's config: advise first (run A), enforce after a SIGHUP (run B).
demo_config() {
    printf '[daemon]\nmode = "%s"\npolicy_file = "%s"\nlearn = false\n' "$1" "$DEMO/policy.toml" \
        >"$DEMO/adaptalloc.toml"
}
demo_config advise
export ADAPTALLOC_CONFIG="$DEMO/adaptalloc.toml"
"$DEPLOY_LOCAL_DIR/../setup.sh"
# A daemon left running by an earlier up.sh --with-daemon is restarted with the demo's policy.
"$DEPLOY_LOCAL_DIR/down.sh" --state-dir "$STATE_DIR" --daemon-only >/dev/null
"$DEPLOY_LOCAL_DIR/up.sh" --state-dir "$STATE_DIR" --with-daemon
# shellcheck disable=SC1091  # written by up.sh
source "$STATE_DIR/env"
VENV="${ADAPTALLOC_VENV:-$PROJECT_ROOT/.venv}"
ADAPTALLOC="$VENV/bin/adaptalloc"
PY="$VENV/bin/python"
if ((KEEP_DAEMON == 0)); then
    trap '"$DEPLOY_LOCAL_DIR/down.sh" --state-dir "$STATE_DIR" --daemon-only >/dev/null' EXIT
fi

echo
echo "== The cluster: 8 nodes; the daemon starts in advise mode: it holds nothing, records what it would do =="
sinfo --Format=partition,nodes,cpus,statecompact

# --- 2. history: scaled copies of real studies, and each app's job script -----------------
# app  file (tests/data/scaling)
APPS=(
    "lu lan_thesis_npb_lu_W"
    "hpc2 hpc_assignment2_openmp"
    "spm spm_project_workers"
    "cs267 cs267hw4_mpi_N1e6"
)
echo
echo "== History: real strong-scaling studies as past runs (runtimes scaled to T(1) = 16 s) =="
for entry in "${APPS[@]}"; do
    read -r app file <<<"$entry"
    "$PY" - "$PROJECT_ROOT/tests/data/scaling/$file.csv" "$DEMO/$app.csv" "$DEMO/job-$app.sh" <<'PY'
"""Scale a study to T(1) = 16 s; write the scaled CSV and a job script sleeping T(n)."""
import csv
import math
import sys

source, scaled_csv, script = sys.argv[1:4]
rows = [(float(r["n"]), float(r["runtime"])) for r in csv.DictReader(open(source))]
mean = {}
for n, t in rows:
    mean.setdefault(n, []).append(t)
points = sorted((n, sum(ts) / len(ts)) for n, ts in mean.items())


def runtime(n):
    """log-log interpolation of the measured curve (the end segments extended)."""
    pts = points if len(points) > 1 else points * 2
    for (n0, t0), (n1, t1) in zip(pts, pts[1:]):
        if n <= n1 or (n1, t1) == pts[-1]:
            if n0 == n1:
                return t0
            w = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
            return math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))
    return pts[-1][1]


scale = 16.0 / runtime(1.0)
with open(scaled_csv, "w") as out:
    out.write("n,runtime\n")
    for n, t in rows:
        out.write(f"{int(n)},{t * scale:.4f}\n")
cases = "\n".join(f"    {n}) t={runtime(n) * scale:.2f} ;;" for n in range(1, 9))
with open(script, "w") as out:
    out.write(
        "#!/bin/bash\n# Sleeps for the app's runtime at $SLURM_NNODES nodes (demo seconds).\n"
        f'case "$SLURM_NNODES" in\n{cases}\n    *) t=5 ;;\nesac\n'
        'echo "nodes=$SLURM_NNODES runtime=$t"\nsleep "$t"\n'
    )
PY
    # A fresh history each run: earlier demo runs (and anything else tagged so) are forgotten.
    "$ADAPTALLOC" -q forget "$app" --yes >/dev/null 2>&1 || true
    "$ADAPTALLOC" -q import csv "$DEMO/$app.csv" --app "$app"
done
cat >"$DEMO/job-newcode.sh" <<'SH'
#!/bin/bash
# An application adaptalloc has never seen: 4 s whatever the size.
echo "nodes=$SLURM_NNODES"
sleep 4
SH
echo
"$ADAPTALLOC" -q apps --format json >"$DEMO/apps.json"
"$PY" - "$DEMO/apps.json" lu hpc2 spm cs267 <<'PY'
import json
import sys

wanted = sys.argv[2:]
for app in json.load(open(sys.argv[1]))["apps"]:
    if app["app"] in wanted:
        curve = (app.get("curve") or {}).get("parameters") or {}
        name, runs, a = app["app"], app["observations"], curve.get("A", 0.0)
        print(f"{name:6} {runs:3} runs   curve: A = {a:5.1f}, max useful size "
              f"{curve.get('max_useful_n')}, processor working set {curve.get('pws_n')}, "
              f"model {curve.get('model')}")
PY

# --- 3 and 4. the same burst, advise then enforce ---------------------------------------------
# The unknown app gets a new name each demo: an earlier demo's daemon may have learned it.
NEWCODE="newcode-$(date +%H%M%S)"
cp "$DEMO/job-newcode.sh" "$DEMO/job-$NEWCODE.sh"
DAEMON_LOG="$(log_file_of "$DAEMON_COMPONENT")"
# burst: 9 moldable jobs at once, on whole nodes (--exclusive: the testbed's nodes are shared
# by core otherwise, and MPI jobs on a cluster get their nodes whole); ids in IDS.
burst() {
    local app ids=()
    for app in lu hpc2 spm cs267 lu hpc2 spm cs267 "$NEWCODE"; do
        ids+=("$(sbatch --parsable --nodes=1-8 --exclusive --time=10 --job-name="demo-$app" \
            --comment="adaptalloc:v1 app=$app" --output=/dev/null --chdir="$DEMO" \
            "$DEMO/job-$app.sh")")
    done
    IDS="$(IFS=,; echo "${ids[*]}")"
    echo "jobs ${ids[0]}..${ids[-1]}"
}
decided() { "$ADAPTALLOC" decisions --job "$IDS" --last 500 --format json 2>/dev/null |
    "$PY" -c 'import json,sys; sys.exit(0 if len(json.load(sys.stdin)["decisions"]) >= 9 else 1)'; }
finished() { [[ -z "$(squeue -h -j "$IDS" -o %i 2>/dev/null)" ]]; }
run_burst() {
    burst
    wait_for "the daemon's records of the demo jobs" "$DAEMON_LOG" decided
    WAIT_TIMEOUT=150 wait_for "the demo jobs to finish" "$LOG_DIR/slurmctld.log" finished
    "$ADAPTALLOC" -q decisions --job "$IDS" --last 500 --format json >"$DEMO/decisions-$1.json"
}

echo
echo "== Run A, advise: 9 moldable jobs at once (sbatch --nodes=1-8 --exclusive --time=10); Slurm sizes them =="
run_burst advise
ADVISE_IDS="$IDS"

echo
echo "== Run B, enforce: [daemon] mode = \"enforce\", SIGHUP (no restart), the same 9 jobs =="
demo_config enforce
kill -HUP "$(running_pid "$DAEMON_COMPONENT")"
enforcing() { grep -qx "default enforce" "$(daemon_state_dir)/modes" 2>/dev/null; }
wait_for "the daemon to enforce" "$DAEMON_LOG" enforcing
# The daemon's view of the nodes may be [daemon] cluster_cache_s (2 s) old: let it see run A's
# nodes free, as run A's first job saw them, before the same burst comes.
sleep 3
run_burst enforce
ENFORCE_IDS="$IDS"

# --- 5. the comparison -------------------------------------------------------------------------
echo
echo "== Advise against enforce, from sacct =="
"$PY" "$DEPLOY_LOCAL_DIR/../demo_ab.py" --advise "$ADVISE_IDS" --enforce "$ENFORCE_IDS" \
    --decisions-advise "$DEMO/decisions-advise.json" \
    --decisions-enforce "$DEMO/decisions-enforce.json" --json "$DEMO/ab.json"
echo "Why one job got its size, as its user would ask: adaptalloc explain ${ENFORCE_IDS%%,*}"
"$ADAPTALLOC" -q explain "${ENFORCE_IDS%%,*}" --state-dir "$(daemon_state_dir)" | sed 's/^/  /'

echo
echo "== Reports =="
"$ADAPTALLOC" -q report --all --html "$DEMO/report" >/dev/null
echo "Per-application reports: $DEMO/report/index.html  (text: $ADAPTALLOC report --all)"
echo "Every decision: $ADAPTALLOC decisions --last 50; the daemon's log: $(log_file_of adaptalloc-daemon)"
echo "(adaptalloc reads no env file by itself: in a new shell, source $STATE_DIR/env first.)"
# The port the running daemon serves, from its own daemon_started event: up.sh may have moved it
# (port offset, $ADAPTALLOC_METRICS_PORT, or 0 when the port was taken).
metrics_port="$("$PY" - "$(log_file_of "$DAEMON_COMPONENT")" <<'PY'
import json, sys
port = None
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if isinstance(event, dict) and event.get("event") == "daemon_started":
        port = event.get("metrics_port")
print(port or 0)
PY
)"
if [[ "$metrics_port" =~ ^[1-9][0-9]*$ ]]; then
    echo "Metrics: http://127.0.0.1:$metrics_port/metrics while the daemon runs"
else
    echo "Metrics: the daemon serves none (its port was taken; see $(log_file_of "$DAEMON_COMPONENT"))"
fi
echo "Demo done in $((SECONDS - T0)) s."
if ((KEEP_DAEMON == 0)); then
    echo "(The daemon stops now so the testbed is quiet for deploy/test.sh; deploy/demo.sh --keep-daemon keeps it.)"
fi
