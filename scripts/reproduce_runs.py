"""The runs of a scripts/reproduce.sh output directory that a report reads (imported by
scripts/reproduce_plot.py and scripts/rnnpaper_report.py), and the results store that keeps
finished runs across machines:

  python3 scripts/reproduce_runs.py restore OUT STORE       # planned runs STORE holds, into OUT
  python3 scripts/reproduce_runs.py save OUT STORE [NAME]   # OUT's finished runs (or NAME) into STORE
  python3 scripts/reproduce_runs.py provenance RUN_DIR ROOT SECONDS COMMAND...
                                                            # RUN_DIR/provenance.json

A store (results/reproduce/EXPERIMENT/SCALE in the repository) holds per finished run what the
reports read: NAME.done (the run's fingerprint), NAME/*.json and NAME/*.jsonl (results and
metrics, and what an experiment's finish_run wrote there, e.g. table3-lm's lm_eval.json; no
checkpoints, no plots)."""
import datetime
import glob
import json
import os
import platform
import shutil
import subprocess
import sys


def plan_rows(out):
    """(name, fingerprint) of every run of OUT/plan.tsv (its first and sixth columns)."""
    with open(os.path.join(out, "plan.tsv")) as f:
        return [(c[0], c[5]) for c in (line.rstrip("\n").split("\t") for line in f) if len(c) > 5]


def read_done(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def finished_runs(out):
    """The names of the runs of OUT's plan (OUT/plan.tsv) that finished with the plan's
    settings: OUT/runs/NAME.done holds the fingerprint plan.tsv gives the run (its sixth
    column). Runs of an earlier plan left in OUT/runs (another lr grid, changed settings)
    are not among them."""
    return [name for name, fp in plan_rows(out) if read_done(os.path.join(out, "runs", name + ".done")) == fp]


def planned_finished(out):
    """finished_runs(OUT) for a report: none is an error."""
    names = finished_runs(out)
    if not names:
        sys.exit(f"no finished runs of {out}/plan.tsv")
    return names


def copy_results(src_run, dst_run):
    """The files of a run directory a report reads: *.json and *.jsonl."""
    os.makedirs(dst_run, exist_ok=True)
    for path in glob.glob(os.path.join(src_run, "*.json")) + glob.glob(os.path.join(src_run, "*.jsonl")):
        shutil.copy2(path, dst_run)


def copy_run(src, dst, name):
    """Run NAME of the directory holding runs SRC into DST: results and .done last (a run is
    finished only once its files are there)."""
    copy_results(os.path.join(src, "runs", name), os.path.join(dst, "runs", name))
    shutil.copy2(os.path.join(src, "runs", name + ".done"), os.path.join(dst, "runs", name + ".done"))


def restore(out, store):
    """Every planned run that OUT has not finished and STORE holds with the plan's fingerprint,
    copied into OUT; prints each one."""
    for name, fp in plan_rows(out):
        if read_done(os.path.join(out, "runs", name + ".done")) is None and \
                read_done(os.path.join(store, "runs", name + ".done")) == fp:
            copy_run(store, out, name)
            print(f"== {name}: restored from {store}")


def provenance(run_dir, root, seconds, command):
    """Where and how a run trained, beside its results (runs of one seed differ in their last
    digits between machines: another CPU takes other BLAS kernels and other -march=native
    code)."""
    def out_of(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), None) \
        if os.path.exists("/proc/cpuinfo") else platform.processor()
    commit = out_of(["git", "-C", root, "rev-parse", "HEAD"])
    if commit and out_of(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"]):
        commit += "-dirty"
    if not commit and os.path.exists(os.path.join(root, "COMMIT")):  # scripts/gpu_check.sh's bundle
        commit = open(os.path.join(root, "COMMIT")).read().strip() or None
    gpus = out_of(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    backend = None  # rotor's "backend: ..." line (the CPU's BLAS kernels, or the GPU) in RUN_DIR.log
    if os.path.exists(run_dir + ".log"):
        backend = next((line[len("backend:"):].strip() for line in open(run_dir + ".log", errors="replace")
                        if line.startswith("backend:")), None)
    record = {"finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "wall_s": int(seconds), "commit": commit, "host": platform.node(), "cpu": cpu,
              "cores": os.cpu_count(), "gpus": gpus.splitlines() if gpus else [], "backend": backend,
              "command": command}
    with open(os.path.join(run_dir, "provenance.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def save(out, store, names):
    """OUT's finished runs NAMES into STORE. A run STORE already holds with the same
    fingerprint stays as stored (OUT's copy may be one restored from it, or an older one
    whose provenance says less)."""
    for name in names:
        done = read_done(os.path.join(store, "runs", name + ".done"))
        if done is not None and done == read_done(os.path.join(out, "runs", name + ".done")):
            continue
        copy_run(out, store, name)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "restore":
        restore(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3], sys.argv[4:] or finished_runs(sys.argv[2]))
    elif len(sys.argv) >= 6 and sys.argv[1] == "provenance":
        provenance(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit(__doc__)
