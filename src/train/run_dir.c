#include "train/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

int run_dir_lock(const char *run_dir, char *err, size_t errlen) {
    if (fs_try_mkdirs(run_dir))
        return rt_error(err, errlen, NULL, "run.dir = %s: cannot create: %s", run_dir,
                        strerror(errno));
    char *path = rt_sprintf("%s/" RUN_DIR_LOCK, run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int r = 0;
    if (fd < 0) {
        r = rt_error(err, errlen, NULL, "%s: cannot open: %s", path, strerror(errno));
    } else if (flock(fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        char holder[256] = "";
        ssize_t got = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0) : -1;
        holder[got > 0 ? got : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        if (e == EWOULDBLOCK)
            r = rt_error(
                err, errlen, NULL,
                "run.dir = %s is in use by another trainer (%s holds %s); wait for it to end, "
                "or give this run another run.dir",
                run_dir, *holder ? holder : "a process", path);
        else
            r = rt_error(err, errlen, NULL, "%s: cannot lock: %s", path, strerror(e));
        close(fd);
    } else {
        char host[128] = "?", line[320];
        gethostname(host, sizeof host - 1);
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        int n = snprintf(line, sizeof line,
                         "rotor train PID %d on %s since %04d-%02d-%02dT%02d:%02d:%02dZ\n",
                         (int)getpid(), host, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec);
        if (ftruncate(fd, 0) || pwrite(fd, line, (size_t)n, 0) != n) {
            r = rt_error(err, errlen, NULL, "%s: cannot write: %s", path, strerror(errno));
            close(fd);
        }
    }
    rt_free(path);
    return r ? -1 : fd;
}

void run_dir_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the file releases the flock */
}

/* Entries of run_dir/checkpoints that belong to a run: step_* directories, best, latest. */
static int count_checkpoints(const char *run_dir, char *newest, size_t n) {
    char *ckdir = rt_sprintf("%s/checkpoints", run_dir);
    DIR *d = opendir(ckdir);
    rt_free(ckdir);
    int count = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int step = !strncmp(e->d_name, "step_", 5);
        if (!step && strcmp(e->d_name, "best") && strcmp(e->d_name, "latest")) continue;
        count++;
        if (step && strcmp(e->d_name, newest) > 0) snprintf(newest, n, "%.40s", e->d_name);
    }
    closedir(d);
    return count;
}

int run_dir_holds_run(const char *run_dir, char *what, size_t n) {
    char *metrics = rt_sprintf("%s/metrics.jsonl", run_dir), newest[64] = "";
    struct stat sb;
    int logged = stat(metrics, &sb) == 0 && sb.st_size > 0;
    int checkpoints = count_checkpoints(run_dir, newest, sizeof newest);
    rt_free(metrics);
    snprintf(what, n, "%s%s%s%s%s", logged ? "metrics.jsonl" : "",
             logged && checkpoints ? " and " : "", checkpoints ? "checkpoints" : "",
             *newest ? " up to " : "", newest);
    return logged || checkpoints;
}

int run_dir_move_aside(const char *run_dir, char **moved, char *err, size_t errlen) {
    char *dir = rt_strdup(run_dir);
    for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--) dir[len - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    *moved = NULL;
    for (int k = 1; !*moved && k < 1000; k++) {
        char *to = k == 1 ? rt_sprintf("%s.old-%s", dir, stamp)
                          : rt_sprintf("%s.old-%s-%d", dir, stamp, k);
        struct stat sb;
        if (lstat(to, &sb) && errno == ENOENT)
            *moved = to;
        else
            rt_free(to);
    }
    int r = 0;
    if (!*moved)
        r = rt_error(err, errlen, NULL, "run.dir = %s: no free name to move it aside to", dir);
    else if (rename(dir, *moved))
        r = rt_error(err, errlen, NULL,
                     "run.dir = %s: cannot move it aside to %s: %s (move it yourself, or choose "
                     "another run.dir)",
                     dir, *moved, strerror(errno));
    else if (fs_try_mkdirs(dir))
        r = rt_error(err, errlen, NULL,
                     "run.dir = %s: cannot create it after moving the earlier run to %s: %s", dir,
                     *moved, strerror(errno));
    if (r) {
        rt_free(*moved);
        *moved = NULL;
    }
    rt_free(dir);
    return r;
}
