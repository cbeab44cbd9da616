"""The runs of a scripts/reproduce.sh output directory that a report reads (imported by
scripts/reproduce_plot.py and scripts/rnnpaper_report.py), and the results store that keeps
finished runs across machines:

  python3 scripts/reproduce_runs.py restore OUT STORE       # planned runs STORE holds, into OUT
  python3 scripts/reproduce_runs.py save OUT STORE [NAME]   # OUT's finished runs (or NAME) into STORE
  python3 scripts/reproduce_runs.py unpack STORE DIR        # every run of STORE as DIR/NAME/ files
  python3 scripts/reproduce_runs.py provenance RUN_DIR ROOT SECONDS COMMAND...
                                                            # RUN_DIR/provenance.json

A store (results/reproduce/EXPERIMENT/SCALE in the repository) is two files that hold per
finished run what the reports read (no checkpoints, no plots):
  runs.json        one line per run, sorted by name: "NAME": {"done": its fingerprint (what
                   NAME.done holds), "files": {FILE: its content}} for each of the run's
                   *.json (results, provenance.json, and what an experiment's finish_run
                   wrote there, e.g. table3-lm's lm_eval.json)
  curves.jsonl.gz  one line per run and *.jsonl file (metrics.jsonl), sorted:
                   {"run": NAME, "file": FILE, "records": [each of its lines]}
A run without "done" (results/checks/: runs of a check, trained by hand) is never restored."""
import datetime
import fcntl
import glob
import gzip
import json
import os
import platform
import subprocess
import sys

RUNS, CURVES = "runs.json", "curves.jsonl.gz"


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


def read_json(path, text):
    try:
        return json.loads(text)
    except ValueError as e:
        sys.exit(f"{path}: {e}")


def read_store(store):
    """NAME -> {"done": fingerprint (absent for a check's run), "files": {FILE: content},
    "curves": {FILE: [record, ...]}} of every run STORE holds; an empty dict where STORE
    does not exist yet."""
    runs_path, curves_path = os.path.join(store, RUNS), os.path.join(store, CURVES)
    if not os.path.exists(runs_path):
        if os.path.isdir(os.path.join(store, "runs")):
            sys.exit(f"{store}: a store of run directories (runs/), not {RUNS} and {CURVES}")
        return {}
    with open(runs_path) as f:
        runs = read_json(runs_path, f.read())
    for run in runs.values():
        run["curves"] = {}
    with gzip.open(curves_path, "rt") as f:
        for n, line in enumerate(f, 1):
            c = read_json(f"{curves_path}:{n}", line)
            if c.get("run") not in runs:
                sys.exit(f"{curves_path}:{n}: run {c.get('run')!r} is not in {runs_path}")
            runs[c["run"]]["curves"][c["file"]] = c["records"]
    return runs


def write_store(store, runs):
    """RUNS and CURVES of STORE from read_store's form, each replaced whole (a rename); the
    same runs give the same bytes (gzip without a date), so that git sees only what changed."""
    os.makedirs(store, exist_ok=True)
    names = sorted(runs)
    lines = [json.dumps(n) + ": " + json.dumps({k: v for k, v in runs[n].items() if k != "curves"},
                                                separators=(",", ":")) for n in names]
    text = "{\n" + ",\n".join(lines) + "\n}\n"
    curves = "".join(json.dumps({"run": n, "file": f, "records": runs[n]["curves"][f]}, separators=(",", ":")) + "\n"
                     for n in names for f in sorted(runs[n]["curves"]))
    for name, data in ((RUNS, text.encode()), (CURVES, gzip.compress(curves.encode(), 9, mtime=0))):
        path = os.path.join(store, name)
        with open(path + ".new", "wb") as f:
            f.write(data)
        os.replace(path + ".new", path)


def read_run(run_dir):
    """A run directory's files that a report reads, in read_store's form: *.json and *.jsonl."""
    run = {"files": {}, "curves": {}}
    for path in sorted(glob.glob(os.path.join(run_dir, "*.json"))):
        with open(path) as f:
            run["files"][os.path.basename(path)] = read_json(path, f.read())
    for path in sorted(glob.glob(os.path.join(run_dir, "*.jsonl"))):
        with open(path) as f:
            run["curves"][os.path.basename(path)] = [read_json(f"{path}:{n}", line)
                                                     for n, line in enumerate(f, 1) if line.strip()]
    return run


def write_run(run, run_dir):
    """read_run's form back into files of RUN_DIR (the same values; rotor's own spacing aside)."""
    os.makedirs(run_dir, exist_ok=True)
    for name, content in run["files"].items():
        with open(os.path.join(run_dir, name), "w") as f:
            json.dump(content, f, indent=2)
            f.write("\n")
    for name, records in run["curves"].items():
        with open(os.path.join(run_dir, name), "w") as f:
            f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


class Locked:
    """STORE locked against another sweep's save (two sweeps of disjoint --only share one)."""
    def __init__(self, store):
        os.makedirs(store, exist_ok=True)
        self.fd = os.open(store, os.O_RDONLY)

    def __enter__(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *_):
        os.close(self.fd)


def restore(out, store):
    """Every planned run that OUT has not finished and STORE holds with the plan's fingerprint,
    written into OUT (its files, then NAME.done: a run is finished only once its files are
    there); prints each one."""
    runs = read_store(store)
    for name, fp in plan_rows(out):
        done = os.path.join(out, "runs", name + ".done")
        if read_done(done) is None and name in runs and runs[name].get("done") == fp:
            write_run(runs[name], os.path.join(out, "runs", name))
            with open(done, "w") as f:
                f.write(fp + "\n")
            print(f"== {name}: restored from {store}")


def unpack(store, dest):
    """Every run of STORE as DEST/NAME/ with its files (and DEST/NAME.done where it has one)."""
    for name, run in read_store(store).items():
        write_run(run, os.path.join(dest, name))
        if "done" in run:
            with open(os.path.join(dest, name + ".done"), "w") as f:
                f.write(run["done"] + "\n")


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
    with Locked(store):
        runs = read_store(store)
        changed = False
        for name in names:
            done = read_done(os.path.join(out, "runs", name + ".done"))
            if done is None:
                sys.exit(f"{out}/runs/{name}.done: no such finished run to save")
            if name in runs and runs[name].get("done") == done:
                continue
            runs[name] = {"done": done, **read_run(os.path.join(out, "runs", name))}
            changed = True
        if changed:
            write_store(store, runs)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "restore":
        restore(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3], sys.argv[4:] or finished_runs(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 6 and sys.argv[1] == "provenance":
        provenance(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit(__doc__)
