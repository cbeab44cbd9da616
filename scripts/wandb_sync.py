#!/usr/bin/env python3
"""Follows a rotor run's metrics.jsonl into a Weights & Biases run (docs/formats.md "Logs and
plots"): a sidecar beside `rotor train`, so the trainer needs no W&B client or network.

    python3 scripts/wandb_sync.py RUN_DIR [--project P] [--entity E] [--name N]
                                  [--follow] [--poll SECONDS] [--offline]

Every number of a metrics record becomes a W&B metric at the record's step, under the names
TensorBoard shows (run.tensorboard): val_X as val/X, the others as train/X, numbers inside
objects under their path (arrays are left out); the run's rotor.ini is the W&B run's config.
The W&B run's id is kept in
RUN_DIR/wandb_sync.json with the last step sent, so that a sidecar started again (or after the
run resumed) continues the same W&B run and sends only later steps: W&B keeps the first value
of a step, and a resumed rotor run redoes the steps after its checkpoint with the same values.

--follow keeps reading while a trainer holds the run directory (its rotor.lock) and ends after
the last record once none does; without it the records written so far are sent and the script
ends. --offline (or WANDB_MODE=offline) writes the W&B run under RUN_DIR/wandb for a later
`wandb sync`. Needs the wandb package (pip install wandb).
"""
import argparse
import configparser
import fcntl
import json
import os
import sys
import time


def flatten(record):
    """The W&B metrics of one metrics.jsonl record (without its step)."""
    out = {}

    def walk(prefix, obj):
        for key, value in obj.items():
            if not prefix and key == "step":
                continue
            if prefix:
                name = prefix + "/" + key
            elif key.startswith("val_"):
                name = "val/" + key[4:]
            elif key.startswith("eval_"):
                name = "eval/" + key[5:]
            else:
                name = "train/" + key
            if isinstance(value, dict):
                walk(name, value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                out[name] = value

    walk("", record)
    return out


def trainer_running(run_dir):
    """Whether a trainer holds RUN_DIR/rotor.lock (the flock `rotor train` takes)."""
    path = os.path.join(run_dir, "rotor.lock")
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def load_state(path):
    try:
        with open(path) as f:
            state = json.load(f)
        return state["run_id"], int(state["last_step"])
    except FileNotFoundError:
        return None, 0
    except (ValueError, KeyError, TypeError) as e:
        sys.exit("wandb_sync: %s: %s (remove it to start a new W&B run)" % (path, e))


def save_state(path, run_id, last_step):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"run_id": run_id, "last_step": last_step}, f)
    os.replace(tmp, path)


def records(path, offset):
    """The complete lines of path from byte offset on: (record or None, the offset after it)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return []
    out = []
    while True:
        nl = data.find(b"\n")
        if nl < 0:
            return out  # an unfinished line waits for the next poll
        line, data = data[:nl], data[nl + 1:]
        offset += nl + 1
        try:
            out.append((json.loads(line), offset))
        except ValueError:
            sys.exit("wandb_sync: %s: a line that is not JSON before byte %d" % (path, offset))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--project", default="rotor")
    ap.add_argument("--entity")
    ap.add_argument("--name", help="the W&B run's name (default: the run directory's name)")
    ap.add_argument("--follow", action="store_true", help="keep reading while a trainer runs")
    ap.add_argument("--poll", type=float, default=10.0, help="seconds between reads with --follow")
    ap.add_argument("--offline", action="store_true", help="write the W&B run locally (WANDB_MODE=offline)")
    a = ap.parse_args()
    metrics = os.path.join(a.run_dir, "metrics.jsonl")
    if not os.path.isdir(a.run_dir):
        sys.exit("wandb_sync: %s: no such run directory" % a.run_dir)
    try:
        import wandb
    except ImportError:
        sys.exit("wandb_sync: the wandb package is not installed (pip install wandb)")
    state_path = os.path.join(a.run_dir, "wandb_sync.json")
    run_id, last_step = load_state(state_path)
    config = {}
    ini = configparser.ConfigParser(interpolation=None)
    if ini.read(os.path.join(a.run_dir, "rotor.ini")):  # the run's every key, as W&B's config
        config = {sec: dict(ini[sec]) for sec in ini.sections()}
    run = wandb.init(project=a.project, entity=a.entity, id=run_id, resume="allow",
                     name=a.name or os.path.basename(os.path.abspath(a.run_dir)), config=config,
                     dir=a.run_dir, mode="offline" if a.offline else None)
    if run_id is None:
        save_state(state_path, run.id, last_step)
    offset, sent = 0, 0
    while True:
        running = a.follow and trainer_running(a.run_dir)
        for rec, offset in records(metrics, offset):
            step = rec.get("step")
            if not isinstance(step, int) or step <= last_step:
                continue
            run.log(flatten(rec), step=step)
            last_step = step
            sent += 1
            save_state(state_path, run.id, last_step)
        if not running:
            break
        time.sleep(a.poll)
    run.finish()
    print("wandb_sync: %d step(s) sent to W&B run %s, up to step %d" % (sent, run.id, last_step))


if __name__ == "__main__":
    main()
