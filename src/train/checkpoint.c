#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/run_config.h"
#include "io/safetensors.h"
#include "model/hf_config.h"
#include "util/error.h"

#define TRAINER_STATE_FORMAT "rotor-trainer-state"
#define TRAINER_STATE_VERSION 1

/* The five files of a complete checkpoint. */
static const char *const CKPT_FILES[] = {"model.safetensors", "config.json", "rotor.ini",
                                         "optimizer.safetensors", "trainer_state.json"};
#define N_CKPT_FILES (sizeof CKPT_FILES / sizeof CKPT_FILES[0])


/* ------------------------------------------------------------------------------------ */
/* File system helpers                                                                  */
/* ------------------------------------------------------------------------------------ */

static int mkdir_p(const char *path) {
    char *p = rt_strdup(path);
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0755) && errno != EEXIST) rc = -1;
        *s = c;
        if (!c) break;
    }
    rt_free(p);
    struct stat sb;
    if (rc == 0 && stat(path, &sb)) rc = -1;
    else if (rc == 0 && !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        rc = -1;
    }
    return rc;
}

/* rm -rf; a missing path is not an error. */
static int remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb)) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode)) return unlink(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *child = rt_sprintf("%s/%s", path, e->d_name);
        if (remove_tree(child)) rc = -1;
        rt_free(child);
    }
    closedir(d);
    return rc ? rc : rmdir(path);
}

/* fsync of a directory, so that the entries created or renamed in it are durable.
 * Filesystems that cannot sync directories answer EINVAL, which is not an error. */
static int fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd) && errno != EINVAL ? -1 : 0;
    close(fd);
    return rc;
}

/* Creates `path` holding `text`, fsynced. */
static int write_text(const char *path, const char *text, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return rt_error(err, errlen, NULL, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text);
    const char *p = text;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) break;
        p += w;
        n -= (size_t)w;
    }
    if (n || fsync(fd)) {
        int e = errno;
        close(fd);
        return rt_error(err, errlen, NULL, "%s: write failed: %s", path, strerror(e));
    }
    if (close(fd)) return rt_error(err, errlen, NULL, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* Whole file as a NUL-terminated string, or NULL with errno set. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t len = 0, cap = 4096;
    char *s = rt_malloc(cap);
    size_t got;
    while ((got = fread(s + len, 1, cap - 1 - len, f)) > 0)
        if ((len += got) == cap - 1) s = rt_realloc(s, cap *= 2);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        rt_free(s);
        errno = EIO;
        return NULL;
    }
    s[len] = '\0';
    return s;
}

/* Checkpoint directory names: "step_" and 1-18 digits. Returns the step, or -1. */
static int64_t parse_step_name(const char *name) {
    if (strncmp(name, "step_", 5)) return -1;
    const char *d = name + 5;
    size_t n = strlen(d);
    if (n == 0 || n > 18 || strspn(d, "0123456789") != n) return -1;
    return strtoll(d, NULL, 10);
}

/* All five files present as regular files. */
static int is_complete(const char *dir) {
    for (size_t i = 0; i < N_CKPT_FILES; i++) {
        char *p = rt_sprintf("%s/%s", dir, CKPT_FILES[i]);
        struct stat sb;
        int ok = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
        rt_free(p);
        if (!ok) return 0;
    }
    return 1;
}

typedef struct {
    int64_t step;
    char name[32];
} CkptEntry;

static int cmp_step_desc(const void *a, const void *b) {
    const CkptEntry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* The complete step_* checkpoints in ckdir, newest (highest step) first. */
static CkptEntry *list_complete(const char *ckdir, int *count) {
    *count = 0;
    DIR *d = opendir(ckdir);
    if (!d) return NULL;
    CkptEntry *list = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t step = parse_step_name(e->d_name);
        if (step < 0) continue;
        char *path = rt_sprintf("%s/%s", ckdir, e->d_name);
        int complete = is_complete(path);
        rt_free(path);
        if (!complete) continue;
        if (n == cap) list = rt_realloc(list, sizeof(CkptEntry) * (size_t)(cap = cap ? 2 * cap : 16));
        list[n].step = step;
        strcpy(list[n].name, e->d_name); /* parse_step_name allows at most 23 characters */
        n++;
    }
    closedir(d);
    qsort(list, (size_t)n, sizeof(CkptEntry), cmp_step_desc);
    *count = n;
    return list;
}

/* ------------------------------------------------------------------------------------ */
/* fp32 host copies of backend [f32] buffers                                            */
/* ------------------------------------------------------------------------------------ */

static float *download_f32(const Backend *be, const void *src, int64_t n) {
    float *h = rt_malloc(sizeof(float) * (size_t)n);
    if (be->f32_size == sizeof(float)) {
        be->download(h, src, sizeof(float) * (size_t)n);
        return h;
    }
    RT_ASSERT(be->f32_size == sizeof(double));
    double *d = rt_malloc(sizeof(double) * (size_t)n);
    be->download(d, src, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) h[i] = (float)d[i];
    rt_free(d);
    return h;
}

static void upload_f32(const Backend *be, void *dst, const float *h, int64_t n) {
    if (be->f32_size == sizeof(float)) {
        be->upload(dst, h, sizeof(float) * (size_t)n);
        return;
    }
    RT_ASSERT(be->f32_size == sizeof(double));
    double *d = rt_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = h[i];
    be->upload(dst, d, sizeof(double) * (size_t)n);
    rt_free(d);
}

/* ------------------------------------------------------------------------------------ */
/* Saving                                                                               */
/* ------------------------------------------------------------------------------------ */

/* Appends the tensor `prefix<name>` for parameter p with data base + p->offset. */
static void add_tensor(StTensor *list, int *n, const char *prefix, const ParamInfo *p, const float *base) {
    StTensor *x = &list[(*n)++];
    memset(x, 0, sizeof(*x));
    int len = snprintf(x->name, sizeof x->name, "%s%s", prefix, p->name);
    RT_ASSERT(len > 0 && (size_t)len < sizeof x->name);
    strcpy(x->dtype, "F32");
    x->ndim = p->ndim;
    for (int d = 0; d < p->ndim; d++) x->shape[d] = p->shape[d];
    x->data = base + p->offset;
    x->nbytes = sizeof(float) * (size_t)p->numel;
}

static int save_model(const char *dir, Model *m, char *err, size_t errlen) {
    const ParamTable *t = model_params(m);
    float *w = download_f32(model_backend(m), model_weights(m), t->total);
    StTensor *list = rt_calloc((size_t)t->n, sizeof(StTensor));
    int n = 0;
    for (int i = 0; i < t->n; i++) add_tensor(list, &n, "", &t->p[i], w);
    static const char *const meta[] = {"format", "pt", NULL};
    char *path = rt_sprintf("%s/model.safetensors", dir);
    int rc = st_write(path, list, n, meta, err, errlen);
    rt_free(path);
    rt_free(list);
    rt_free(w);
    return rc;
}

static int save_optimizer(const char *dir, const ParamTable *t, const AdamW *opt, char *err, size_t errlen) {
    float *mm = download_f32(opt->be, opt->m, opt->n), *vv = download_f32(opt->be, opt->v, opt->n);
    StTensor *list = rt_calloc(2 * (size_t)t->n, sizeof(StTensor));
    int n = 0;
    for (int i = 0; i < t->n; i++)
        if (t->p[i].trainable) add_tensor(list, &n, "exp_avg.", &t->p[i], mm);
    for (int i = 0; i < t->n; i++)
        if (t->p[i].trainable) add_tensor(list, &n, "exp_avg_sq.", &t->p[i], vv);
    char step[32];
    snprintf(step, sizeof step, "%lld", (long long)opt->t);
    const char *const meta[] = {"step", step, NULL};
    char *path = rt_sprintf("%s/optimizer.safetensors", dir);
    int rc = st_write(path, list, n, meta, err, errlen);
    rt_free(path);
    rt_free(list);
    rt_free(mm);
    rt_free(vv);
    return rc;
}

/* Writes dir/name from the JSON value (dumped with `flags`). Steals the reference. */
static int save_json(const char *dir, const char *name, json_t *j, size_t flags, char *err, size_t errlen) {
    char *text = json_dumps(j, flags);
    json_decref(j);
    RT_ASSERT(text);
    char *path = rt_sprintf("%s/%s", dir, name);
    int rc = write_text(path, text, err, errlen);
    rt_free(path);
    free(text);
    return rc;
}

static int save_ini(const char *dir, const RunConfig *rc, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    RT_ASSERT(f);
    run_config_write_ini(rc, f);
    fclose(f);
    char *path = rt_sprintf("%s/rotor.ini", dir);
    int r = write_text(path, text, err, errlen);
    rt_free(path);
    free(text);
    return r;
}

static json_t *trainer_state_json(const TrainerState *st, const AdamW *opt) {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)st->seed);
    json_t *j = json_object();
    json_object_set_new(j, "format", json_string(TRAINER_STATE_FORMAT));
    json_object_set_new(j, "format_version", json_integer(TRAINER_STATE_VERSION));
    json_object_set_new(j, "step", json_integer(st->step));
    json_object_set_new(j, "tokens", json_integer(st->tokens));
    json_object_set_new(j, "seed", json_string(seed));
    json_object_set_new(j, "world_size", json_integer(st->world_size));
    json_object_set_new(j, "optimizer_step", json_integer(opt->t));
    json_object_set_new(j, "code_version", json_string(ROTOR_VERSION));
    json_object_set(j, "data", st->data_state ? st->data_state : json_null());
    return j;
}

/* Deletes all but the newest `keep` complete checkpoints (never `current`) and leftover
 * .tmp-* entries. Failures only warn: the new checkpoint is saved either way. */
static void prune(const char *ckdir, const char *current, int keep) {
    DIR *d = opendir(ckdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, ".tmp-", 5)) continue;
            char *p = rt_sprintf("%s/%s", ckdir, e->d_name);
            if (remove_tree(p)) rt_warn("cannot remove the leftover %s: %s", p, strerror(errno));
            rt_free(p);
        }
        closedir(d);
    }
    if (keep <= 0) return;
    int n;
    CkptEntry *list = list_complete(ckdir, &n);
    for (int i = keep; i < n; i++) {
        if (!strcmp(list[i].name, current)) continue;
        char *p = rt_sprintf("%s/%s", ckdir, list[i].name);
        if (remove_tree(p)) rt_warn("cannot delete the old checkpoint %s: %s", p, strerror(errno));
        rt_free(p);
    }
    rt_free(list);
}

int checkpoint_save(const char *run_dir, const TrainerState *st, Model *m, const AdamW *opt,
                    const RunConfig *rc, int keep, char *err, size_t errlen) {
    const ParamTable *t = model_params(m);
    RT_ASSERT(opt && opt->n == t->total && st->step >= 0);
    char name[32];
    snprintf(name, sizeof name, "step_%08lld", (long long)st->step);
    char *ckdir = rt_sprintf("%s/checkpoints", run_dir);
    char *tmp = rt_sprintf("%s/.tmp-%s", ckdir, name);
    char *old = rt_sprintf("%s/.tmp-old-%s", ckdir, name);
    char *final = rt_sprintf("%s/%s", ckdir, name);
    char *latest_tmp = rt_sprintf("%s/latest.tmp", ckdir), *latest = rt_sprintf("%s/latest", ckdir);
    char line[40];
    snprintf(line, sizeof line, "%s\n", name);
    int r = -1;
    struct stat sb;

    if (mkdir_p(ckdir)) {
        rt_error(err, errlen, NULL, "%s: cannot create the directory: %s", ckdir, strerror(errno));
        goto out;
    }
    if (remove_tree(tmp) || mkdir(tmp, 0755)) {
        rt_error(err, errlen, NULL, "%s: cannot create the directory: %s", tmp, strerror(errno));
        goto out;
    }
    if (save_model(tmp, m, err, errlen) ||
        save_json(tmp, "config.json", hf_config_to_json(model_config(m)), HF_CONFIG_JSON_FLAGS, err, errlen) ||
        save_ini(tmp, rc, err, errlen) || save_optimizer(tmp, t, opt, err, errlen) ||
        save_json(tmp, "trainer_state.json", trainer_state_json(st, opt),
                  JSON_INDENT(2) | JSON_REAL_PRECISION(17), err, errlen))
        goto out_rm;
    if (fsync_dir(tmp)) {
        rt_error(err, errlen, NULL, "%s: cannot sync the directory: %s", tmp, strerror(errno));
        goto out_rm;
    }
    /* A checkpoint of the same step is moved aside to a .tmp-* name (ignored by readers,
     * removed by prune below) so that the new one can take its name. */
    int replacing = lstat(final, &sb) == 0;
    if (replacing && (remove_tree(old) || rename(final, old))) {
        rt_error(err, errlen, NULL, "%s: cannot move the existing checkpoint aside: %s", final, strerror(errno));
        goto out_rm;
    }
    if (rename(tmp, final)) {
        rt_error(err, errlen, NULL, "%s: cannot rename %s into place: %s", final, tmp, strerror(errno));
        if (replacing) rename(old, final); /* best effort: put the previous one back */
        goto out_rm;
    }
    if (fsync_dir(ckdir)) {
        rt_error(err, errlen, NULL, "%s: cannot sync the directory: %s", ckdir, strerror(errno));
        goto out;
    }
    if (write_text(latest_tmp, line, err, errlen)) goto out;
    if (rename(latest_tmp, latest) || fsync_dir(ckdir)) {
        rt_error(err, errlen, NULL, "%s: cannot update: %s", latest, strerror(errno));
        goto out;
    }
    prune(ckdir, name, keep);
    r = 0;
    goto out;
out_rm:
    remove_tree(tmp);
out:
    rt_free(ckdir);
    rt_free(tmp);
    rt_free(old);
    rt_free(final);
    rt_free(latest_tmp);
    rt_free(latest);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Finding                                                                              */
/* ------------------------------------------------------------------------------------ */

char *checkpoint_find_latest(const char *run_dir) {
    char *ckdir = rt_sprintf("%s/checkpoints", run_dir);
    char *path = rt_sprintf("%s/latest", ckdir);
    char *named = read_text(path);
    rt_free(path);
    char *found = NULL;
    if (named) {
        named[strcspn(named, "\r\n")] = '\0';
        if (parse_step_name(named) >= 0) {
            char *dir = rt_sprintf("%s/%s", ckdir, named);
            if (is_complete(dir)) found = dir;
            else rt_free(dir);
        }
        rt_free(named);
    }
    if (!found) {
        int n;
        CkptEntry *list = list_complete(ckdir, &n);
        if (n > 0) found = rt_sprintf("%s/%s", ckdir, list[0].name);
        rt_free(list);
    }
    rt_free(ckdir);
    return found;
}

/* ------------------------------------------------------------------------------------ */
/* Loading                                                                              */
/* ------------------------------------------------------------------------------------ */

static void format_shape(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

/* Copies the tensors "<prefixes[k]><name>" of the file into dst[k] + offset, for every
 * parameter (trainable ones only if `trainable_only`), checking that the file holds exactly
 * these tensors as F32 of the parameter's shape. */
static int gather(const StFile *f, const char *path, const ParamTable *t, const char *const *prefixes,
                  float *const *dst, int nprefix, int trainable_only, char *err, size_t errlen) {
    int missing = 0, expected = 0;
    const char *first_missing = NULL, *first_prefix = "";
    for (int k = 0; k < nprefix; k++) {
        for (int i = 0; i < t->n; i++) {
            const ParamInfo *p = &t->p[i];
            if (trainable_only && !p->trainable) continue;
            expected++;
            char name[ST_NAME_MAX];
            snprintf(name, sizeof name, "%s%s", prefixes[k], p->name);
            const StTensor *x = st_find(f, name);
            if (!x) {
                if (!missing++) {
                    first_missing = p->name;
                    first_prefix = prefixes[k];
                }
                continue;
            }
            if (strcmp(x->dtype, "F32"))
                return rt_error(err, errlen, NULL, "%s: tensor %s has dtype %s, expected F32", path, name, x->dtype);
            int same = x->ndim == p->ndim;
            for (int d = 0; same && d < p->ndim; d++) same = x->shape[d] == p->shape[d];
            if (!same) {
                char got[128], want[128];
                format_shape(got, sizeof got, x->shape, x->ndim);
                format_shape(want, sizeof want, p->shape, p->ndim);
                return rt_error(err, errlen, NULL, "%s: tensor %s has shape %s, the model expects %s", path, name, got, want);
            }
            memcpy(dst[k] + p->offset, x->data, x->nbytes);
        }
    }
    if (missing)
        return rt_error(err, errlen, NULL, "%s: tensor %s%s is missing (%d of the %d tensors the model expects are absent)",
                    path, first_prefix, first_missing, missing, expected);
    if (st_count(f) != expected) {
        /* Every expected name was found, so any other tensor is unexpected. */
        for (int i = 0; i < st_count(f); i++) {
            const char *name = st_at(f, i)->name;
            int known = 0;
            for (int k = 0; k < nprefix && !known; k++) {
                size_t pl = strlen(prefixes[k]);
                int idx = strncmp(name, prefixes[k], pl) ? -1 : params_find(t, name + pl);
                known = idx >= 0 && (!trainable_only || t->p[idx].trainable);
            }
            if (!known)
                return rt_error(err, errlen, NULL, "%s: unexpected tensor %s, which the model does not have (%d unexpected)",
                            path, name, st_count(f) - expected);
        }
    }
    return 0;
}

/* Non-negative integer member of a JSON object. */
static int get_count(const json_t *j, const char *key, int64_t *out) {
    const json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = json_integer_value(v);
    return 0;
}

/* Parses trainer_state.json; data_state is a new reference (NULL for null). */
static int read_trainer_state(const char *path, TrainerState *st, int64_t *opt_step, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) return rt_error(err, errlen, NULL, "%s: %s (line %d)", path, jerr.text, jerr.line);
    int r = -1;
    const json_t *fmt = json_object_get(j, "format"), *seed = json_object_get(j, "seed");
    int64_t version, world;
    const char *bad = NULL;
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), TRAINER_STATE_FORMAT))
        bad = "\"format\" is not \"" TRAINER_STATE_FORMAT "\"";
    else if (get_count(j, "format_version", &version) || version != TRAINER_STATE_VERSION)
        bad = "unsupported \"format_version\" (this build reads 1)";
    else if (get_count(j, "step", &st->step)) bad = "\"step\" is missing or not a non-negative integer";
    else if (get_count(j, "tokens", &st->tokens)) bad = "\"tokens\" is missing or not a non-negative integer";
    else if (get_count(j, "optimizer_step", opt_step))
        bad = "\"optimizer_step\" is missing or not a non-negative integer";
    else if (get_count(j, "world_size", &world) || world < 1 || world > 1 << 30)
        bad = "\"world_size\" is missing or not a positive integer";
    else if (!json_is_string(seed) || !*json_string_value(seed) ||
             strspn(json_string_value(seed), "0123456789") != strlen(json_string_value(seed)) ||
             strlen(json_string_value(seed)) > 20)
        bad = "\"seed\" is missing or not a decimal string";
    else if (!json_object_get(j, "data"))
        bad = "\"data\" is missing";
    if (bad) {
        rt_error(err, errlen, NULL, "%s: %s", path, bad);
        goto out;
    }
    errno = 0;
    st->seed = strtoull(json_string_value(seed), NULL, 10);
    if (errno) {
        rt_error(err, errlen, NULL, "%s: \"seed\" does not fit 64 bits", path);
        goto out;
    }
    st->world_size = (int)world;
    json_t *data = json_object_get(j, "data");
    st->data_state = json_is_null(data) ? NULL : json_incref(data);
    r = 0;
out:
    json_decref(j);
    return r;
}

int checkpoint_load(const char *ckpt_dir, Model *m, AdamW *opt, TrainerState *st, char *err,
                    size_t errlen) {
    const ParamTable *t = model_params(m);
    const Backend *be = model_backend(m);
    char *wpath = rt_sprintf("%s/model.safetensors", ckpt_dir);
    char *opath = rt_sprintf("%s/optimizer.safetensors", ckpt_dir);
    char *spath = rt_sprintf("%s/trainer_state.json", ckpt_dir);
    float *w = rt_malloc(sizeof(float) * (size_t)t->total), *mm = NULL, *vv = NULL;
    StFile *wf = NULL, *of = NULL;
    TrainerState ts = {0};
    int64_t opt_step = 0, state_opt_step = 0;
    int r = -1;

    if (!(wf = st_open(wpath, err, errlen))) goto out;
    const char *const none[] = {""};
    if (gather(wf, wpath, t, none, &w, 1, 0, err, errlen)) goto out;
    if (opt) {
        RT_ASSERT(opt->n == t->total);
        if (!(of = st_open(opath, err, errlen))) goto out;
        const char *step = st_meta(of, "step");
        if (!step || !*step || strspn(step, "0123456789") != strlen(step) || strlen(step) > 18) {
            rt_error(err, errlen, NULL, "%s: metadata \"step\" is missing or not a step count", opath);
            goto out;
        }
        opt_step = strtoll(step, NULL, 10);
        /* Frozen parameters have no moments in the file: theirs stay zero. */
        mm = rt_calloc((size_t)t->total, sizeof(float));
        vv = rt_calloc((size_t)t->total, sizeof(float));
        const char *const prefixes[] = {"exp_avg.", "exp_avg_sq."};
        float *const dst[] = {mm, vv};
        if (gather(of, opath, t, prefixes, dst, 2, 1, err, errlen)) goto out;
    }
    if (st) {
        if (read_trainer_state(spath, &ts, &state_opt_step, err, errlen)) goto out;
        if (opt && state_opt_step != opt_step) {
            rt_error(err, errlen, NULL, "%s: optimizer_step %lld does not match the step %lld of %s (files from different saves?)",
                 spath, (long long)state_opt_step, (long long)opt_step, opath);
            json_decref(ts.data_state);
            goto out;
        }
    }
    /* Everything checked: commit. */
    upload_f32(be, model_weights(m), w, t->total);
    if (opt) {
        upload_f32(opt->be, opt->m, mm, t->total);
        upload_f32(opt->be, opt->v, vv, t->total);
        opt->t = opt_step;
    }
    if (st) *st = ts;
    r = 0;
out:
    st_close(wf);
    st_close(of);
    rt_free(w);
    rt_free(mm);
    rt_free(vv);
    rt_free(wpath);
    rt_free(opath);
    rt_free(spath);
    return r;
}

int checkpoint_read_config(const char *ckpt_dir, RunConfig *rc, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/rotor.ini", ckpt_dir);
    char *text = read_text(path);
    int r;
    if (!text) r = rt_error(err, errlen, NULL, "%s: cannot read: %s", path, strerror(errno));
    else r = run_config_load_string(rc, text, path, NULL, 0, err, errlen);
    rt_free(text);
    rt_free(path);
    return r;
}
