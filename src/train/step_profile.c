#include "train/step_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fsutil.h"

enum { MAX_ROWS = 4096 };

struct StepProfile {
    const Backend *be;
    int64_t first, last;
    int lead;
    char dir[1100];
    json_t *events;       /* the trace's events so far */
    OpTime sum[MAX_ROWS]; /* per op and shape over the profiled steps */
    int nsum;
    double wall_ms; /* the profiled steps' wall time */
    double t0;      /* the first profiled step's start: the trace's time 0 */
    OpTime rows[MAX_ROWS];
};

int step_profile_parse(const char *spec, int64_t *first, int64_t *last, char *err, size_t errlen) {
    *first = *last = 0;
    if (!spec[0]) return 0;
    char *end;
    errno = 0;
    long long a = strtoll(spec, &end, 10), b = 0;
    int ok = end != spec && *end == ':' && errno == 0;
    if (ok) {
        const char *s = end + 1;
        b = strtoll(s, &end, 10);
        ok = end != s && *end == '\0' && errno == 0 && a >= 1 && b >= a;
    }
    if (!ok)
        return rt_error(
            err, errlen, NULL,
            "run.profile_steps = '%s': expected A:B, the first and last step to profile, "
            "1 <= A <= B (steps counted from 1)",
            spec);
    *first = a;
    *last = b;
    return 0;
}

StepProfile *step_profile_create(const Backend *be, int64_t first, int64_t last,
                                 const char *run_dir, int lead) {
    if (!first) return NULL;
    if (!be->profile) {
        if (lead)
            printf("run.profile_steps: the %s backend has no op profiler; no profile is written\n",
                   be->name);
        return NULL;
    }
    StepProfile *p = rt_calloc(1, sizeof *p);
    p->be = be;
    p->first = first;
    p->last = last;
    p->lead = lead;
    snprintf(p->dir, sizeof p->dir, "%s/profile", run_dir);
    p->events = json_array();
    return p;
}

void step_profile_begin(StepProfile *p, int64_t done) {
    if (!p || done < p->first || done > p->last) return;
    if (done == p->first) {
        p->be->synchronize();
        p->be->profile(1);
    }
}

static void add_to_sum(StepProfile *p, const OpTime *r) {
    OpTime *s = NULL;
    for (int i = 0; i < p->nsum && !s; i++)
        if (!strcmp(p->sum[i].op, r->op) && !strcmp(p->sum[i].shape, r->shape)) s = &p->sum[i];
    if (!s && p->nsum == MAX_ROWS) s = &p->sum[MAX_ROWS - 1]; /* past the last row: into it */
    if (!s) {
        s = &p->sum[p->nsum++];
        *s = *r;
        return;
    }
    s->calls += r->calls;
    s->ms += r->ms;
    s->flops += r->flops;
    s->bytes += r->bytes;
}

static json_t *event(const char *name, const char *cat, double ts_us, double dur_us, json_t *args) {
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat, "ph",
                     "X", "ts", ts_us, "dur", dur_us, "pid", 0, "tid", 0, "args", args);
}

static void write_files(StepProfile *p) {
    fs_mkdirs(p->dir);
    char path[1200];
    json_t *trace = json_pack("{s:O, s:s}", "traceEvents", p->events, "displayTimeUnit", "ms");
    snprintf(path, sizeof path, "%s/trace.json", p->dir);
    if (json_dump_file(trace, path, JSON_COMPACT | JSON_REAL_PRECISION(15)))
        rt_die("run.profile_steps: cannot write %s", path);
    json_decref(trace);
    snprintf(path, sizeof path, "%s/ops.tsv", p->dir);
    FILE *f = fopen(path, "w");
    if (!f) rt_die("run.profile_steps: cannot write %s: %s", path, strerror(errno));
    fprintf(f, "op\tshape\tcalls\tms\tshare\tgflop_s\tgb_s\n");
    for (int i = 0; i < p->nsum; i++) {
        const OpTime *r = &p->sum[i];
        double s = r->ms * 1e-3;
        fprintf(f, "%s\t%s\t%" PRId64 "\t%.6f\t%.4f\t%.3f\t%.3f\n", r->op, r->shape, r->calls,
                r->ms, p->wall_ms > 0 ? r->ms / p->wall_ms : 0, s > 0 ? r->flops / s / 1e9 : 0,
                s > 0 ? r->bytes / s / 1e9 : 0);
    }
    if (fclose(f)) rt_die("run.profile_steps: cannot write %s: %s", path, strerror(errno));
    printf("run.profile_steps: steps %" PRId64 " to %" PRId64
           " profiled into %s (trace.json, ops.tsv)\n",
           p->first, p->last, p->dir);
}

void step_profile_end(StepProfile *p, int64_t done, double t_start, double t_end) {
    if (!p || done < p->first || done > p->last) return;
    p->be->synchronize();
    int n = p->be->profile_read(p->rows, MAX_ROWS);
    if (n > MAX_ROWS) n = MAX_ROWS;
    if (done == p->last) p->be->profile(0);
    if (!p->lead) return;
    if (done == p->first) p->t0 = t_start;
    double ts = (t_start - p->t0) * 1e6, wall = (t_end - t_start) * 1e6;
    char name[64];
    snprintf(name, sizeof name, "step %" PRId64, done);
    json_array_append_new(
        p->events, event(name, "step", ts, wall, json_pack("{s:I}", "step", (json_int_t)done)));
    for (int i = 0; i < n; i++) { /* back to back from the step's start */
        const OpTime *r = &p->rows[i];
        json_array_append_new(p->events, event(r->op, "op", ts, r->ms * 1e3,
                                               json_pack("{s:s, s:I, s:f, s:f}", "shape", r->shape,
                                                         "calls", (json_int_t)r->calls, "flops",
                                                         r->flops, "bytes", r->bytes)));
        ts += r->ms * 1e3;
        add_to_sum(p, r);
    }
    p->wall_ms += wall * 1e-3;
    if (done == p->last) write_files(p);
}

void step_profile_free(StepProfile *p) {
    if (!p) return;
    json_decref(p->events);
    rt_free(p);
}
