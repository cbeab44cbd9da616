"""The runs of a scripts/reproduce.sh output directory that a report reads (imported by
scripts/reproduce_plot.py and scripts/rnnpaper_report.py)."""
import os
import sys


def finished_runs(out):
    """The names of the runs of OUT's plan (OUT/plan.tsv) that finished with the plan's
    settings: OUT/runs/NAME.done holds the fingerprint plan.tsv gives the run (its sixth
    column). Runs of an earlier plan left in OUT/runs (another lr grid, changed settings)
    are not among them."""
    names = []
    with open(os.path.join(out, "plan.tsv")) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            try:
                with open(os.path.join(out, "runs", cols[0] + ".done")) as done:
                    if done.read().strip() == cols[5]:
                        names.append(cols[0])
            except OSError:
                pass
    return names


def planned_finished(out):
    """finished_runs(OUT) for a report: none is an error."""
    names = finished_runs(out)
    if not names:
        sys.exit(f"no finished runs of {out}/plan.tsv")
    return names
