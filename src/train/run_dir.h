/* A training run's directory (docs/formats.md "Run directories"): the lock that keeps a
 * second trainer out of it, whether it holds an earlier run, and moving such a run aside.
 * Rank 0 only. */
#ifndef ROTOR_RUN_DIR_H
#define ROTOR_RUN_DIR_H

#include <stddef.h>

/* The lock file of a run directory. */
#define RUN_DIR_LOCK "rotor.lock"

/* Creates run_dir if needed and locks it: an exclusive flock on RUN_DIR/rotor.lock, held until
 * run_dir_unlock or the end of the process (a run killed with -9 leaves no stale lock); the
 * file says who holds it (PID, host, start time). Returns the lock's file descriptor, or -1
 * with a message naming the process that holds it. */
int run_dir_lock(const char *run_dir, char *err, size_t errlen);
void run_dir_unlock(int fd);

/* 1 when run_dir holds a run that a fresh start would destroy: a non-empty metrics.jsonl or
 * a checkpoint (step_*, best or latest under checkpoints/), described in `what`. */
int run_dir_holds_run(const char *run_dir, char *what, size_t n);

/* Renames run_dir to RUN_DIR.old-YYYYMMDD-HHMMSS (with -2, -3, ... when that is taken) and
 * makes a new, empty run_dir; *moved is the new name (malloc'd). Nothing is deleted. Returns
 * 0, or -1 with a message naming both paths. */
int run_dir_move_aside(const char *run_dir, char **moved, char *err, size_t errlen);

#endif
