#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/run_config.h"
#include "device/host_copy.h"
#include "dist/dist.h"
#include "io/safetensors.h"
#include "model/hf_config.h"
#include "model/hf_remote.h"
#include "train/checkpoint_snapshot.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/sha256.h"

#define TRAINER_STATE_FORMAT "rotor-trainer-state"
#define TRAINER_STATE_VERSION 1

/* Optimizer shards of a ZeRO-1 run: one file per rank. */
#define OPT_SHARD_FORMAT "optimizer.rank%05d-of-%05d.safetensors"

/* ------------------------------------------------------------------------------------ */
/* File system helpers                                                                  */
/* ------------------------------------------------------------------------------------ */

/* Creates `path` holding `text`, fsynced. */
static int write_text(const char *path, const char *text, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return rt_error(err, errlen, NULL, "%s: cannot create: %s", path, strerror(errno));
    if (fs_write_all(fd, text, strlen(text)) || fsync(fd)) {
        int e = errno;
        close(fd);
        return rt_error(err, errlen, NULL, "%s: write failed: %s", path, strerror(e));
    }
    if (close(fd))
        return rt_error(err, errlen, NULL, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* Creates dst as a copy of src, fsynced. */
static int copy_file(const char *src, const char *dst, char *err, size_t errlen) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return rt_error(err, errlen, NULL, "%s: cannot open: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        close(in);
        return rt_error(err, errlen, NULL, "%s: cannot create: %s", dst, strerror(errno));
    }
    enum { CHUNK = 1 << 20 };
    char *buf = rt_malloc(CHUNK);
    ssize_t got;
    int bad = 0;
    while (!bad && (got = read(in, buf, CHUNK)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        bad = got < 0 ? rt_error(err, errlen, NULL, "%s: read failed: %s", src, strerror(errno))
              : fs_write_all(out, buf, (size_t)got)
                  ? rt_error(err, errlen, NULL, "%s: write failed: %s", dst, strerror(errno))
                  : 0;
    }
    if (!bad && fsync(out))
        bad = rt_error(err, errlen, NULL, "%s: write failed: %s", dst, strerror(errno));
    rt_free(buf);
    close(in);
    if (close(out) && !bad)
        bad = rt_error(err, errlen, NULL, "%s: write failed: %s", dst, strerror(errno));
    return bad;
}

/* Checkpoint directory names: "step_" and 1-18 digits. Returns the step, or -1. */
static int64_t parse_step_name(const char *name) {
    if (strncmp(name, "step_", 5)) return -1;
    const char *d = name + 5;
    size_t n = strlen(d);
    if (n == 0 || n > 18 || strspn(d, "0123456789") != n) return -1;
    return strtoll(d, NULL, 10);
}

typedef struct {
    int64_t step;
    char name[32];
} CkptEntry;

static int cmp_step_desc(const void *a, const void *b) {
    const CkptEntry *x = a, *y = b;
    return x->step < y->step ? 1 : x->step > y->step ? -1 : strcmp(x->name, y->name);
}

/* The step_* checkpoints in ckdir, newest (highest step) first; with `complete`, only those
 * whose files are all present with their recorded sizes (checkpoint_verify without hashes). */
static CkptEntry *list_steps(const char *ckdir, int complete, int *count) {
    *count = 0;
    DIR *d = opendir(ckdir);
    if (!d) return NULL;
    CkptEntry *list = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t step = parse_step_name(e->d_name);
        if (step < 0) continue;
        char *path = rt_sprintf("%s/%s", ckdir, e->d_name), err[1024];
        int skip = complete && checkpoint_verify(path, 0, err, sizeof err);
        rt_free(path);
        if (skip) continue;
        if (n == cap)
            list = rt_realloc(list, sizeof(CkptEntry) * (size_t)(cap = cap ? 2 * cap : 16));
        list[n].step = step;
        strcpy(list[n].name, e->d_name); /* parse_step_name allows at most 23 characters */
        n++;
    }
    closedir(d);
    if (n) qsort(list, (size_t)n, sizeof(CkptEntry), cmp_step_desc);
    *count = n;
    return list;
}

/* ------------------------------------------------------------------------------------ */
/* Saving                                                                               */
/* ------------------------------------------------------------------------------------ */

/* RUN_DIR/checkpoints (rt_free it). */
static char *checkpoints_dir(const char *run_dir) { return rt_sprintf("%s/checkpoints", run_dir); }

/* The directory name of the checkpoint of `step` there: step_ and its 8 (or more) digits. */
static void step_name(int64_t step, char name[32]) {
    snprintf(name, 32, "step_%08lld", (long long)step);
}

/* RUN_DIR/checkpoints/.tmp-step_N, where the checkpoint of step N is written (rt_free it). */
static char *temp_dir(const char *run_dir, int64_t step) {
    char name[32];
    step_name(step, name);
    return rt_sprintf("%s/checkpoints/.tmp-%s", run_dir, name);
}

/* Appends the tensor `prefix<name>` for parameter p with data base + p->offset. */
static void add_tensor(StTensor *list, int *n, const char *prefix, const ParamInfo *p,
                       const float *base) {
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

/* The files rank 0 writes (SaveFn): each from the job's snapshot into the directory dir. */
typedef int (*SaveFn)(const char *dir, CheckpointJob *j, char *err, size_t errlen);

static int save_model(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    const ParamTable *t = j->snap->params;
    StTensor *list = rt_calloc((size_t)t->n, sizeof(StTensor));
    int n = 0;
    for (int i = 0; i < t->n; i++) add_tensor(list, &n, "", &t->p[i], j->snap->weights.p);
    static const char *const meta[] = {"format", "pt", NULL};
    char *path = rt_sprintf("%s/model.safetensors", dir);
    int rc = st_write(path, list, n, meta, err, errlen);
    rt_free(path);
    rt_free(list);
    return rc;
}

/* optimizer.safetensors (unsharded): each state buffer of every trainable parameter under
 * "<state name>.<name>" (the optimizer owns every element); metadata step and optimizer. */
static int save_optimizer(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    const CheckpointSnapshot *s = j->snap;
    if (s->sharded) return 0;
    const ParamTable *t = s->params;
    const OptimizerSpec *sp = s->spec;
    StTensor *list = rt_calloc((size_t)sp->nstate * (size_t)t->n, sizeof(StTensor));
    int n = 0;
    for (int k = 0; k < sp->nstate; k++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.", sp->state_names[k]);
        for (int i = 0; i < t->n; i++)
            if (t->p[i].trainable) add_tensor(list, &n, prefix, &t->p[i], s->state[k].p);
    }
    char step[32];
    snprintf(step, sizeof step, "%lld", (long long)s->opt_step);
    const char *const meta[] = {"step", step, "optimizer", sp->name, NULL};
    char *path = rt_sprintf("%s/optimizer.safetensors", dir);
    int rc = st_write(path, list, n, meta, err, errlen);
    rt_free(path);
    rt_free(list);
    return rc;
}

/* optimizer.rankR-of-N.safetensors: this rank's slice [lo, hi) of the flat state buffers,
 * each under its state name, with metadata step, optimizer, start, end and total (the flat
 * size), so that a run with another number of ranks can cut its own slices from the set. */
static int save_optimizer_shard(const char *dir, const CheckpointJob *j, char *err, size_t errlen) {
    const CheckpointSnapshot *s = j->snap;
    const OptimizerSpec *sp = s->spec;
    int64_t n = s->hi - s->lo;
    StTensor list[OPT_MAX_STATE];
    for (int k = 0; k < sp->nstate; k++) {
        list[k] = (StTensor){"", "F32", 1, {n}, s->state[k].p, sizeof(float) * (size_t)n};
        snprintf(list[k].name, sizeof list[k].name, "%s", sp->state_names[k]);
    }
    char step[32], start[32], end[32], all[32];
    snprintf(step, sizeof step, "%lld", (long long)s->opt_step);
    snprintf(start, sizeof start, "%lld", (long long)s->lo);
    snprintf(end, sizeof end, "%lld", (long long)s->hi);
    snprintf(all, sizeof all, "%lld", (long long)s->params->total);
    const char *const meta[] = {"step", step, "optimizer", sp->name, "start", start,
                                "end",  end,  "total",     all,      NULL};
    char *path = rt_sprintf("%s/" OPT_SHARD_FORMAT, dir, dist_rank(), dist_world());
    int rc = st_write(path, list, sp->nstate, meta, err, errlen);
    rt_free(path);
    return rc;
}

/* The sha256 and the size of every file of the directory (but the trainer state): the
 * trainer state's "files" {name: hex} and "file_sizes" {name: bytes}. */
static int file_records(const char *dir, json_t **files, json_t **sizes, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return rt_error(err, errlen, dir, "cannot list: %s", strerror(errno));
    *files = json_object();
    *sizes = json_object();
    int r = 0;
    struct dirent *e;
    while (!r && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "trainer_state.json")) continue;
        char *p = rt_sprintf("%s/%s", dir, e->d_name);
        char hex[65];
        struct stat sb;
        if (stat(p, &sb))
            r = rt_error(err, errlen, p, "cannot stat: %s", strerror(errno));
        else
            r = sha256_file(p, hex, err, errlen);
        rt_free(p);
        if (r) break;
        json_object_set_new(*files, e->d_name, json_string(hex));
        json_object_set_new(*sizes, e->d_name, json_integer((json_int_t)sb.st_size));
    }
    closedir(d);
    if (r) {
        json_decref(*files);
        json_decref(*sizes);
    }
    return r;
}

/* Writes dir/name from the JSON value (dumped with `flags`). Steals the reference. */
static int save_json(const char *dir, const char *name, json_t *j, size_t flags, char *err,
                     size_t errlen) {
    char *text = json_dumps(j, flags);
    json_decref(j);
    RT_ASSERT(text);
    char *path = rt_sprintf("%s/%s", dir, name);
    int rc = write_text(path, text, err, errlen);
    rt_free(path);
    free(text);
    return rc;
}

/* config.json, and the Python files of rotor's model where it names one (hf_remote.h). */
static int save_hf_config(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    const ModelConfig *c = &j->snap->model;
    if (save_json(dir, "config.json", hf_config_to_json(c), HF_CONFIG_JSON_FLAGS, err, errlen))
        return -1;
    for (int i = 0; !hf_config_is_fla(c) && i < HF_REMOTE_NFILES; i++) {
        char *path = rt_sprintf("%s/%s", dir, HF_REMOTE_FILES[i].name);
        int r = write_text(path, HF_REMOTE_FILES[i].text, err, errlen);
        rt_free(path);
        if (r) return -1;
    }
    return 0;
}

static int save_ini(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/rotor.ini", dir);
    int r = write_text(path, j->ini, err, errlen);
    rt_free(path);
    return r;
}

static json_t *trainer_state_json(const CheckpointSnapshot *s, json_t *files, json_t *sizes,
                                  json_t *tokenizer) {
    const TrainerState *st = &s->st;
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)st->seed);
    json_t *j = json_object();
    json_object_set_new(j, "format", json_string(TRAINER_STATE_FORMAT));
    json_object_set_new(j, "format_version", json_integer(TRAINER_STATE_VERSION));
    json_object_set_new(j, "step", json_integer(st->step));
    json_object_set_new(j, "tokens", json_integer(st->tokens));
    json_object_set_new(j, "seed", json_string(seed));
    json_object_set_new(j, "world_size", json_integer(st->world_size));
    json_object_set_new(j, "optimizer_step", json_integer(s->opt_step));
    json_object_set_new(j, "code_version", json_string(ROTOR_VERSION));
    json_object_set(j, "data", st->data_state ? st->data_state : json_null());
    json_object_set_new(j, "optimizer_sharded", json_boolean(s->sharded));
    const BestValidation *b = &st->best;
    json_object_set_new(j, "best",
                        b->metric == KEEP_BEST_NONE
                            ? json_null()
                            : json_pack("{s:s, s:f, s:I}", "metric",
                                        run_config_keep_best_name(b->metric), "value", b->value,
                                        "step", (json_int_t)b->step));
    json_object_set_new(j, "plateau",
                        json_pack("{s:f, s:o}", "lr_scale", st->plateau.lr_scale, "best_val_loss",
                                  isnan(st->plateau.best_val_loss)
                                      ? json_null()
                                      : json_real(st->plateau.best_val_loss)));
    json_object_set_new(j, "tokenizer", tokenizer);
    json_object_set_new(j, "files", files);
    json_object_set_new(j, "file_sizes", sizes);
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
            if (fs_remove_tree(p)) rt_warn("cannot remove the leftover %s: %s", p, strerror(errno));
            rt_free(p);
        }
        closedir(d);
    }
    if (keep <= 0) return;
    int n;
    CkptEntry *list = list_steps(ckdir, 1, &n);
    for (int i = keep; i < n; i++) {
        if (!strcmp(list[i].name, current)) continue;
        /* renamed first, so that a process killed while deleting leaves a .tmp-* directory
         * (removed by the next save), never a step_* directory with some of its files */
        char *p = rt_sprintf("%s/%s", ckdir, list[i].name),
             *gone = rt_sprintf("%s/.tmp-old-%s", ckdir, list[i].name);
        if (fs_remove_tree(gone) || rename(p, gone) || fs_remove_tree(gone))
            rt_warn("cannot delete the old checkpoint %s: %s", p, strerror(errno));
        rt_free(p);
        rt_free(gone);
    }
    rt_free(list);
}

/* Moves the complete directory ckdir/.tmp-NAME into place as ckdir/NAME, fsynced. An
 * existing NAME is moved aside to a .tmp-* name first (ignored by readers, removed by
 * prune) and put back if the rename fails. On error the temporary directory is left to the
 * caller. */
static int install_dir(const char *ckdir, const char *name, char *err, size_t errlen) {
    char *tmp = rt_sprintf("%s/.tmp-%s", ckdir, name),
         *old = rt_sprintf("%s/.tmp-old-%s", ckdir, name);
    char *final = rt_sprintf("%s/%s", ckdir, name);
    struct stat sb;
    int r = 0;
    if (fs_sync_dir(tmp))
        r = rt_error(err, errlen, NULL, "%s: cannot sync the directory: %s", tmp, strerror(errno));
    int replacing = !r && lstat(final, &sb) == 0;
    if (replacing && (fs_remove_tree(old) || rename(final, old)))
        r = rt_error(err, errlen, NULL, "%s: cannot move the existing checkpoint aside: %s", final,
                     strerror(errno));
    if (!r && rename(tmp, final)) {
        r = rt_error(err, errlen, NULL, "%s: cannot rename %s into place: %s", final, tmp,
                     strerror(errno));
        if (replacing) rename(old, final); /* best effort: put the previous one back */
    }
    if (!r && fs_sync_dir(ckdir))
        r = rt_error(err, errlen, NULL, "%s: cannot sync the directory: %s", ckdir,
                     strerror(errno));
    rt_free(tmp);
    rt_free(old);
    rt_free(final);
    return r;
}

#define CARRY_FILE "carry_state.safetensors"

/* The copy of data.tokenizer in a checkpoint, made when the model is at most
 * TOKENIZER_COPY_MAX bytes (SentencePiece models are 0.2-5 MB), as Hugging Face checkpoints
 * hold theirs. */
#define TOKENIZER_COPY "tokenizer.model"
#define TOKENIZER_COPY_MAX (64 << 20)

/* data.tokenizer's record in the trainer state, {"path": its absolute path, "sha256",
 * "copy": TOKENIZER_COPY or null}, the model copied into dir when it is small; JSON null
 * for a run without data.tokenizer. */
static int save_tokenizer(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    json_t **rec = &j->tokenizer_rec;
    json_decref(*rec);
    *rec = json_null();
    if (!j->tokenizer[0]) return 0;
    char *abs = realpath(j->tokenizer, NULL), hex[65];
    if (!abs)
        return rt_error(err, errlen, NULL, "data.tokenizer = %s: %s", j->tokenizer,
                        strerror(errno));
    struct stat sb;
    int r = stat(abs, &sb) ? rt_error(err, errlen, abs, "cannot stat: %s", strerror(errno))
                           : sha256_file(abs, hex, err, errlen);
    int copy = !r && sb.st_size <= TOKENIZER_COPY_MAX;
    if (copy) {
        char *dst = rt_sprintf("%s/" TOKENIZER_COPY, dir);
        r = copy_file(abs, dst, err, errlen);
        rt_free(dst);
    }
    if (!r) {
        json_decref(*rec);
        *rec = json_pack("{s:s, s:s, s:o}", "path", abs, "sha256", hex, "copy",
                         copy ? json_string(TOKENIZER_COPY) : json_null());
    }
    free(abs);
    return r;
}

static int save_carry(const char *dir, CheckpointJob *j, char *err, size_t errlen) {
    const TrainerState *st = &j->snap->st;
    if (!st->carry) return 0;
    char *path = rt_sprintf("%s/" CARRY_FILE, dir), streams[32];
    StTensor t = {.dtype = "F32",
                  .ndim = 2,
                  .shape = {st->carry_rows, st->carry_width},
                  .data = st->carry,
                  .nbytes = sizeof(float) * (size_t)(st->carry_rows * st->carry_width)};
    snprintf(t.name, sizeof t.name, "state");
    snprintf(streams, sizeof streams, "%lld", (long long)st->carry_rows);
    const char *const meta[] = {"format", "rotor-carried-state", "streams", streams, NULL};
    int r = st_write(path, &t, 1, meta, err, errlen);
    rt_free(path);
    return r;
}

int checkpoint_load_carry(const char *ckpt_dir, int64_t rows, int64_t width, float *out, char *err,
                          size_t errlen) {
    char *path = rt_sprintf("%s/" CARRY_FILE, ckpt_dir);
    StFile *f = fs_exists(path) ? st_open(path, err, errlen) : NULL;
    int r = -1;
    if (f) {
        const StTensor *t = st_find(f, "state");
        if (!t || strcmp(t->dtype, "F32") || t->ndim != 2)
            rt_error(err, errlen, path, "holds no F32 tensor \"state\" of two dimensions");
        else if (t->shape[0] != rows || t->shape[1] != width)
            rt_error(err, errlen, path,
                     "holds the states of %lld streams of width %lld; this run carries %lld of "
                     "width %lld "
                     "(ranks x micro_batch x grad_accum, or the model, changed)",
                     (long long)t->shape[0], (long long)t->shape[1], (long long)rows,
                     (long long)width);
        else
            memcpy(out, t->data, t->nbytes), r = 0;
        st_close(f);
    } else if (!fs_exists(path)) {
        rt_error(err, errlen, path,
                 "the carried states of train.carry_state are missing (a checkpoint of a run "
                 "without it?)");
    }
    rt_free(path);
    return r;
}

/* A test hook (tests/async_checkpoint.sh): ROTOR_TEST_CKPT_WRITE_DELAY_MS milliseconds of
 * sleep after each file a rank writes into a checkpoint (config.json with its Python files
 * counting as one), so that a test can catch a write in flight. */
static int test_write_delay(char *err, size_t errlen) {
    const char *v = getenv("ROTOR_TEST_CKPT_WRITE_DELAY_MS");
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (*end || errno || ms < 0 || ms > 600000)
        return rt_error(err, errlen, NULL,
                        "ROTOR_TEST_CKPT_WRITE_DELAY_MS = %s is not a number of milliseconds "
                        "from 0 to 600000",
                        v);
    struct timespec left = {ms / 1000, ms % 1000 * 1000000L};
    while (nanosleep(&left, &left) && errno == EINTR) continue;
    return 0;
}

int checkpoint_begin(const char *run_dir, int64_t step, char *err, size_t errlen) {
    char *ckdir = checkpoints_dir(run_dir), *tmp = temp_dir(run_dir, step);
    int r = 0;
    if (fs_try_mkdirs(ckdir))
        r = rt_error(err, errlen, NULL, "%s: cannot create the directory: %s", ckdir,
                     strerror(errno));
    else if (fs_remove_tree(tmp) || mkdir(tmp, 0755))
        r = rt_error(err, errlen, NULL, "%s: cannot create the directory: %s", tmp,
                     strerror(errno));
    rt_free(ckdir);
    rt_free(tmp);
    return r;
}

int checkpoint_write_files(CheckpointJob *j, char *err, size_t errlen) {
    static const SaveFn rank0_files[] = {save_model,     save_hf_config, save_ini,
                                         save_optimizer, save_carry,     save_tokenizer};
    char *tmp = temp_dir(j->run_dir, j->snap->st.step);
    int r = 0;
    for (size_t i = 0; !r && dist_rank() == 0 && i < sizeof rank0_files / sizeof rank0_files[0];
         i++)
        r = rank0_files[i](tmp, j, err, errlen) ? -1 : test_write_delay(err, errlen);
    if (!r && j->snap->sharded)
        r = save_optimizer_shard(tmp, j, err, errlen) ? -1 : test_write_delay(err, errlen);
    rt_free(tmp);
    return r;
}

int checkpoint_finish(CheckpointJob *j, char *err, size_t errlen) {
    int64_t step = j->snap->st.step;
    char name[32], line[40];
    step_name(step, name);
    snprintf(line, sizeof line, "%s\n", name);
    char *ckdir = checkpoints_dir(j->run_dir), *tmp = temp_dir(j->run_dir, step);
    char *latest_tmp = rt_sprintf("%s/latest.tmp", ckdir), *latest = rt_sprintf("%s/latest", ckdir);
    json_t *files = NULL, *sizes = NULL;
    int ok = !file_records(tmp, &files, &sizes, err, errlen);
    if (ok) {
        json_t *state = trainer_state_json(j->snap, files, sizes, j->tokenizer_rec);
        j->tokenizer_rec = NULL; /* the state holds it now */
        ok = !save_json(tmp, "trainer_state.json", state, JSON_INDENT(2) | JSON_REAL_PRECISION(17),
                        err, errlen);
    }
    if (ok) ok = !install_dir(ckdir, name, err, errlen);
    if (ok) ok = !write_text(latest_tmp, line, err, errlen);
    if (ok && (rename(latest_tmp, latest) || fs_sync_dir(ckdir)))
        ok = !rt_error(err, errlen, NULL, "%s: cannot update: %s", latest, strerror(errno));
    if (ok)
        prune(ckdir, name, j->keep);
    else
        fs_remove_tree(tmp);
    if (ok && j->keep_best) ok = !checkpoint_keep_best(j->run_dir, step, err, errlen);
    json_decref(j->tokenizer_rec);
    j->tokenizer_rec = NULL;
    rt_free(ckdir);
    rt_free(tmp);
    rt_free(latest_tmp);
    rt_free(latest);
    return ok ? 0 : -1;
}

void checkpoint_discard(CheckpointJob *j) {
    char *tmp = temp_dir(j->run_dir, j->snap->st.step);
    fs_remove_tree(tmp);
    rt_free(tmp);
    json_decref(j->tokenizer_rec);
    j->tokenizer_rec = NULL;
}

int checkpoint_keep_best(const char *run_dir, int64_t step, char *err, size_t errlen) {
    char *ckdir = rt_sprintf("%s/checkpoints", run_dir);
    char *src = rt_sprintf("%s/step_%08lld", ckdir, (long long)step);
    char *tmp = rt_sprintf("%s/.tmp-" CHECKPOINT_BEST, ckdir),
         *old = rt_sprintf("%s/.tmp-old-" CHECKPOINT_BEST, ckdir);
    int r = 0;
    DIR *d = NULL;
    if (checkpoint_verify(src, 0, err, errlen))
        r = -1;
    else if (fs_remove_tree(tmp) || mkdir(tmp, 0755))
        r = rt_error(err, errlen, NULL, "%s: cannot create the directory: %s", tmp,
                     strerror(errno));
    else if (!(d = opendir(src)))
        r = rt_error(err, errlen, NULL, "%s: cannot list: %s", src, strerror(errno));
    /* the files are never changed after their checkpoint is complete, so links share them
     * safely; a file system without hard links gets copies */
    struct dirent *e;
    while (!r && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *from = rt_sprintf("%s/%s", src, e->d_name), *to = rt_sprintf("%s/%s", tmp, e->d_name);
        if (link(from, to)) r = copy_file(from, to, err, errlen);
        rt_free(from);
        rt_free(to);
    }
    if (d) closedir(d);
    if (!r) r = install_dir(ckdir, CHECKPOINT_BEST, err, errlen);
    fs_remove_tree(r ? tmp : old);
    rt_free(ckdir);
    rt_free(src);
    rt_free(tmp);
    rt_free(old);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Finding                                                                              */
/* ------------------------------------------------------------------------------------ */

int checkpoint_verify(const char *dir, int hashes, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/trainer_state.json", dir);
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    json_t *files = json_object_get(j, "files"), *sizes = json_object_get(j, "file_sizes");
    struct stat sd;
    int r = 0;
    if (stat(dir, &sd) || !S_ISDIR(sd.st_mode))
        r = rt_error(err, errlen, dir, "no such checkpoint directory%s",
                     fs_exists(dir) ? " (not a directory)" : "");
    else if (!j && !fs_exists(path))
        r = rt_error(err, errlen, path, "missing: not a complete checkpoint");
    else if (!j)
        r = rt_error(err, errlen, path, "%s (line %d): damaged or cut short", jerr.text, jerr.line);
    else if (!json_is_object(files) || !json_object_size(files))
        r = rt_error(err, errlen, path, "lists no files (\"files\")");
    const char *name;
    json_t *v;
    json_object_foreach(r ? NULL : files, name, v) {
        char *p = rt_sprintf("%s/%s", dir, name), hex[65];
        const json_t *size = json_object_get(sizes, name);
        struct stat sb;
        if (!*name || strchr(name, '/') || !json_is_string(v) || strlen(json_string_value(v)) != 64)
            r = rt_error(err, errlen, path, "\"files\": \"%s\" is not a file name with a sha256",
                         name);
        else if (stat(p, &sb))
            r = errno == ENOENT ? rt_error(err, errlen, p, "missing, though %s lists it", path)
                                : rt_error(err, errlen, p, "cannot stat: %s", strerror(errno));
        else if (!S_ISREG(sb.st_mode))
            r = rt_error(err, errlen, p, "not a regular file");
        else if (json_is_integer(size) && sb.st_size != json_integer_value(size))
            r = rt_error(err, errlen, p,
                         "%lld bytes, but %lld when it was written (changed since: cut short, "
                         "damaged or edited)",
                         (long long)sb.st_size, (long long)json_integer_value(size));
        else if (hashes && sha256_file(p, hex, err, errlen))
            r = -1;
        else if (hashes && strcmp(hex, json_string_value(v)))
            r = rt_error(err, errlen, p,
                         "sha256 %s differs from %s recorded when it was written (changed since: "
                         "damaged or edited)",
                         hex, json_string_value(v));
        rt_free(p);
        if (r) break;
    }
    json_decref(j);
    rt_free(path);
    return r;
}

int checkpoint_find_latest(const char *run_dir, int hashes, char **found, char *err,
                           size_t errlen) {
    *found = NULL;
    char *ckdir = rt_sprintf("%s/checkpoints", run_dir), *latest = rt_sprintf("%s/latest", ckdir);
    char *named = fs_read_file(latest, NULL);
    /* candidates: the one `latest` names, then every step_* directory, newest first */
    int n;
    CkptEntry *list = list_steps(ckdir, 0, &n);
    char **cand = rt_calloc((size_t)n + 1, sizeof(char *));
    int nc = 0;
    if (named) {
        named[strcspn(named, "\r\n")] = '\0';
        char *p = rt_sprintf("%s/%s", ckdir, named);
        if (parse_step_name(named) < 0)
            rt_warn("%s: \"%.64s\" is not a checkpoint's name; ignored", latest, named);
        else if (!fs_exists(p))
            rt_warn("%s names %s, which does not exist; taking the newest checkpoint there is",
                    latest, p);
        else
            cand[nc++] = p, p = NULL;
        rt_free(p);
        rt_free(named);
    }
    for (int i = 0; i < n; i++) {
        char *p = rt_sprintf("%s/%s", ckdir, list[i].name);
        if (nc && !strcmp(p, cand[0]))
            rt_free(p);
        else
            cand[nc++] = p;
    }
    rt_free(list);
    for (int i = 0; i < nc; i++) {
        char why[1024];
        if (!*found && !checkpoint_verify(cand[i], hashes, why, sizeof why)) {
            *found = cand[i];
            continue;
        }
        if (!*found) rt_warn("skipping the checkpoint %s: %s", strrchr(cand[i], '/') + 1, why);
        rt_free(cand[i]);
    }
    int r = 0;
    if (!*found && nc)
        r = rt_error(err, errlen, NULL,
                     "%s: none of its %d checkpoint%s is intact (each one's fault is above), so "
                     "nothing was resumed or changed; load one anyway with --resume DIR "
                     "--no-verify, or start afresh "
                     "with --overwrite (which moves this run aside)",
                     ckdir, nc, nc > 1 ? "s" : "");
    rt_free(cand);
    rt_free(latest);
    rt_free(ckdir);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Loading                                                                              */
/* ------------------------------------------------------------------------------------ */

/* Checks that the file holds exactly the tensors "<prefixes[k]><name>" of every parameter
 * (trainable ones only if `trainable_only`), as F32 of the parameter's shape. */
static int check_tensors(const StFile *f, const char *path, const ParamTable *t,
                         const char *const *prefixes, int nprefix, int trainable_only, char *err,
                         size_t errlen) {
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
                return rt_error(err, errlen, NULL, "%s: tensor %s has dtype %s, expected F32", path,
                                name, x->dtype);
            int same = x->ndim == p->ndim;
            for (int d = 0; same && d < p->ndim; d++) same = x->shape[d] == p->shape[d];
            if (!same) {
                char got[128], want[128];
                st_format_shape(got, sizeof got, x->shape, x->ndim);
                st_format_shape(want, sizeof want, p->shape, p->ndim);
                return rt_error(err, errlen, NULL,
                                "%s: tensor %s has shape %s, the model expects %s", path, name, got,
                                want);
            }
        }
    }
    if (missing)
        return rt_error(
            err, errlen, NULL,
            "%s: tensor %s%s is missing (%d of the %d tensors the model expects are absent)", path,
            first_prefix, first_missing, missing, expected);
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
                return rt_error(
                    err, errlen, NULL,
                    "%s: unexpected tensor %s, which the model does not have (%d unexpected)", path,
                    name, st_count(f) - expected);
        }
    }
    return 0;
}

/* Copies the part inside the flat range [lo, hi) of every tensor "<prefix><name>" (checked
 * by check_tensors) into dst, which holds elements lo..hi-1. */
static void copy_range(const StFile *f, const ParamTable *t, const char *prefix, int trainable_only,
                       int64_t lo, int64_t hi, float *dst) {
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        int64_t a = p->offset > lo ? p->offset : lo,
                b = p->offset + p->numel < hi ? p->offset + p->numel : hi;
        if ((trainable_only && !p->trainable) || a >= b) continue;
        char name[ST_NAME_MAX];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const StTensor *x = st_find(f, name);
        memcpy(dst + (a - lo), (const float *)x->data + (a - p->offset),
               sizeof(float) * (size_t)(b - a));
    }
}

/* Unsigned integer metadata value of a safetensors file, or -1. */
static int64_t meta_count(const StFile *f, const char *key) {
    const char *v = st_meta(f, key);
    if (!v || !*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 18) return -1;
    return strtoll(v, NULL, 10);
}

/* Whether the optimizer file `path` holds the state of `sp` (metadata "optimizer"; files
 * without it are AdamW's, written before RMSprop existed). */
static int check_optimizer_kind(const StFile *f, const char *path, const OptimizerSpec *sp,
                                char *err, size_t errlen) {
    const char *kind = st_meta(f, "optimizer");
    if (!kind) kind = "adamw";
    if (strcmp(kind, sp->name))
        return rt_error(err, errlen, path,
                        "holds the state of optimizer %s, but train.optimizer = %s", kind,
                        sp->name);
    return 0;
}

/* The optimizer state buffers of the flat range [lo, hi) and the optimizer step, from the
 * optimizer file of an unsharded checkpoint or from the per-rank slices of a ZeRO-1 one (any
 * number of ranks: the slices of the files that overlap [lo, hi) are cut out). */
static int load_optimizer_state(const char *dir, const ParamTable *t, const OptimizerSpec *sp,
                                int64_t lo, int64_t hi, float **bufs, int64_t *step, char *err,
                                size_t errlen) {
    char *full = rt_sprintf("%s/optimizer.safetensors", dir);
    struct stat sb;
    int r = -1;
    if (stat(full, &sb) == 0) {
        StFile *f = st_open(full, err, errlen);
        char prefix[OPT_MAX_STATE][64];
        const char *prefixes[OPT_MAX_STATE];
        for (int k = 0; k < sp->nstate; k++) {
            snprintf(prefix[k], sizeof prefix[k], "%s.", sp->state_names[k]);
            prefixes[k] = prefix[k];
        }
        if (f && (*step = meta_count(f, "step")) < 0)
            rt_error(err, errlen, full, "metadata \"step\" is missing or not a step count");
        else if (f && !check_optimizer_kind(f, full, sp, err, errlen) &&
                 !check_tensors(f, full, t, prefixes, sp->nstate, 1, err, errlen)) {
            for (int k = 0; k < sp->nstate; k++) copy_range(f, t, prefixes[k], 1, lo, hi, bufs[k]);
            r = 0;
        }
        st_close(f);
        rt_free(full);
        return r;
    }
    rt_free(full);
    /* ZeRO-1 slices: together they must tile [0, total) */
    DIR *d = opendir(dir);
    if (!d) return rt_error(err, errlen, dir, "cannot list: %s", strerror(errno));
    int64_t covered = 0, nfiles = 0;
    *step = -1;
    struct dirent *e;
    r = 0;
    while (!r && (e = readdir(d))) {
        int fr, fw;
        char tail;
        if (sscanf(e->d_name, "optimizer.rank%d-of-%d.safetenso%c", &fr, &fw, &tail) != 3) continue;
        char *path = rt_sprintf("%s/%s", dir, e->d_name);
        StFile *f = st_open(path, err, errlen);
        if (!f) r = -1;
        int64_t a = f ? meta_count(f, "start") : -1, b = f ? meta_count(f, "end") : -1;
        int64_t all = f ? meta_count(f, "total") : -1, s = f ? meta_count(f, "step") : -1;
        const StTensor *x[OPT_MAX_STATE] = {NULL};
        int shapes_ok = 1;
        for (int k = 0; f && k < sp->nstate; k++) {
            x[k] = st_find(f, sp->state_names[k]);
            shapes_ok &= x[k] && !strcmp(x[k]->dtype, "F32") &&
                         x[k]->nbytes == sizeof(float) * (size_t)(b - a);
        }
        if (!r && (a < 0 || b < a || all != t->total || s < 0))
            r = rt_error(
                err, errlen, path,
                "metadata start/end/total/step missing or not for this model (%lld parameters)",
                (long long)t->total);
        else if (!r && check_optimizer_kind(f, path, sp, err, errlen))
            r = -1;
        else if (!r && !shapes_ok)
            r = rt_error(err, errlen, path, "%s%s%s missing or not F32 of %lld elements",
                         sp->state_names[0], sp->nstate > 1 ? " / " : "",
                         sp->nstate > 1 ? sp->state_names[1] : "", (long long)(b - a));
        else if (!r && *step >= 0 && s != *step)
            r = rt_error(err, errlen, path,
                         "optimizer step %lld differs from the other slices' %lld", (long long)s,
                         (long long)*step);
        if (!r) {
            *step = s;
            covered += b - a;
            nfiles++;
            int64_t p = a > lo ? a : lo, q = b < hi ? b : hi;
            for (int k = 0; k < sp->nstate && p < q; k++)
                memcpy(bufs[k] + (p - lo), (const float *)x[k]->data + (p - a),
                       sizeof(float) * (size_t)(q - p));
        }
        st_close(f);
        rt_free(path);
    }
    closedir(d);
    if (!r && (nfiles == 0 || covered != t->total))
        r = rt_error(
            err, errlen, dir,
            "the optimizer state is incomplete: %lld optimizer files cover %lld of %lld elements",
            (long long)nfiles, (long long)covered, (long long)t->total);
    return r;
}

/* Non-negative integer member of a JSON object. */
static int get_count(const json_t *j, const char *key, int64_t *out) {
    const json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = json_integer_value(v);
    return 0;
}

/* The trainer state's best validation (absent or null in checkpoints of runs without one). */
static int read_best(const json_t *j, int64_t step, BestValidation *b) {
    *b = (BestValidation){KEEP_BEST_NONE, 0, 0};
    if (!j || json_is_null(j)) return 0;
    const json_t *metric = json_object_get(j, "metric"), *value = json_object_get(j, "value");
    if (!json_is_string(metric) || !json_is_number(value) || get_count(j, "step", &b->step) ||
        b->step > step)
        return -1;
    b->value = json_number_value(value);
    for (KeepBest k = KEEP_BEST_VAL_LOSS; k <= KEEP_BEST_VAL_ACCURACY; k++)
        if (!strcmp(json_string_value(metric), run_config_keep_best_name(k))) b->metric = k;
    return b->metric == KEEP_BEST_NONE ? -1 : 0;
}

/* Parses trainer_state.json; data_state is a new reference (NULL for null). */
static int read_trainer_state(const char *path, TrainerState *st, int64_t *opt_step, char *err,
                              size_t errlen) {
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
    else if (get_count(j, "step", &st->step))
        bad = "\"step\" is missing or not a non-negative integer";
    else if (get_count(j, "tokens", &st->tokens))
        bad = "\"tokens\" is missing or not a non-negative integer";
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
    if (read_best(json_object_get(j, "best"), st->step, &st->best)) {
        rt_error(err, errlen, NULL,
                 "%s: \"best\" is not null or {\"metric\": \"val_loss\" or \"val_accuracy\", "
                 "\"value\": number, "
                 "\"step\": a step up to \"step\"}",
                 path);
        goto out;
    }
    const json_t *pl = json_object_get(j, "plateau"), *scale = json_object_get(pl, "lr_scale"),
                 *pbest = json_object_get(pl, "best_val_loss");
    st->plateau = (Plateau){1, NAN};
    if (pl && (!json_is_number(scale) || json_number_value(scale) <= 0 ||
               !(json_is_null(pbest) || json_is_number(pbest)))) {
        rt_error(err, errlen, NULL,
                 "%s: \"plateau\" is not {\"lr_scale\": a positive number, \"best_val_loss\": "
                 "number or null}",
                 path);
        goto out;
    }
    if (pl)
        st->plateau = (Plateau){json_number_value(scale),
                                json_is_number(pbest) ? json_number_value(pbest) : NAN};
    json_t *data = json_object_get(j, "data");
    st->data_state = json_is_null(data) ? NULL : json_incref(data);
    r = 0;
out:
    json_decref(j);
    return r;
}

int checkpoint_read_state(const char *ckpt_dir, TrainerState *st, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/trainer_state.json", ckpt_dir);
    int64_t opt_step;
    int r = read_trainer_state(path, st, &opt_step, err, errlen);
    rt_free(path);
    return r;
}

int checkpoint_load(const char *ckpt_dir, const CheckpointLoad *to, char *err, size_t errlen) {
    if (to->verify && checkpoint_verify(ckpt_dir, 1, err, errlen)) return -1;
    Model *m = to->model;
    Optimizer *opt = to->opt;
    TrainerState *st = to->state;
    const ParamTable *t = model_params(m);
    const Backend *be = model_backend(m);
    char *wpath = rt_sprintf("%s/model.safetensors", ckpt_dir);
    char *spath = rt_sprintf("%s/trainer_state.json", ckpt_dir);
    float *w = rt_calloc((size_t)t->total, sizeof(float)),
          *bufs[OPT_MAX_STATE] = {NULL}; /* padding stays 0 */
    StFile *wf = NULL;
    TrainerState ts = {0};
    int64_t opt_step = 0, state_opt_step = 0;
    int r = -1;

    if (!(wf = st_open(wpath, err, errlen))) goto out;
    const char *const none[] = {""};
    if (check_tensors(wf, wpath, t, none, 1, 0, err, errlen)) goto out;
    copy_range(wf, t, "", 0, 0, t->total, w);
    if (params_check_finite(t, w, 0, t->total, wpath, err, errlen)) goto out;
    if (opt) {
        /* frozen parameters have no state in the files: theirs stays zero */
        for (int k = 0; k < opt->spec->nstate; k++)
            bufs[k] = rt_calloc((size_t)(opt->hi - opt->lo), sizeof(float));
        if (load_optimizer_state(ckpt_dir, t, opt->spec, opt->lo, opt->hi, bufs, &opt_step, err,
                                 errlen))
            goto out;
        for (int k = 0; k < opt->spec->nstate; k++) {
            char *what = rt_sprintf("%s/optimizer state %s", ckpt_dir, opt->spec->state_names[k]);
            int bad = params_check_finite(t, bufs[k], opt->lo, opt->hi, what, err, errlen);
            rt_free(what);
            if (bad) goto out;
        }
    }
    if (st) {
        if (read_trainer_state(spath, &ts, &state_opt_step, err, errlen)) goto out;
        if (opt && state_opt_step != opt_step) {
            rt_error(err, errlen, NULL,
                     "%s: optimizer_step %lld does not match the optimizer files' step %lld (files "
                     "from different saves?)",
                     spath, (long long)state_opt_step, (long long)opt_step);
            json_decref(ts.data_state);
            goto out;
        }
    }
    /* Everything checked: commit. */
    backend_upload_f32(be, model_weights_to_write(m), w, t->total);
    if (opt) {
        for (int k = 0; k < opt->spec->nstate; k++)
            backend_upload_f32(opt->be, opt->state[k], bufs[k], opt->hi - opt->lo);
        opt->t = opt_step;
    }
    if (st) *st = ts;
    r = 0;
out:
    st_close(wf);
    rt_free(w);
    for (int k = 0; k < OPT_MAX_STATE; k++) rt_free(bufs[k]);
    rt_free(wpath);
    rt_free(spath);
    return r;
}

Model *checkpoint_load_model(const char *ckpt_dir, const Backend *be, int verify, char *err,
                             size_t errlen) {
    if (verify && checkpoint_verify(ckpt_dir, 1, err, errlen))
        return NULL; /* config.json included */
    char *path = rt_sprintf("%s/config.json", ckpt_dir);
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    ModelConfig defaults, mc;
    model_config_defaults(&defaults);
    Model *m = NULL;
    char msg[1024];
    if (!j) {
        rt_error(err, errlen, path, "%s (line %d)", jerr.text, jerr.line);
    } else if (hf_config_from_json(j, &defaults, &mc, msg, sizeof msg)) {
        rt_error(err, errlen, path, "%s", msg);
    } else {
        m = model_create(&mc, be);
        if (checkpoint_load(ckpt_dir, &(CheckpointLoad){.model = m}, err, errlen)) {
            model_free(m);
            m = NULL;
        }
    }
    json_decref(j);
    rt_free(path);
    return m;
}

int checkpoint_read_config(const char *ckpt_dir, RunConfig *rc, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/rotor.ini", ckpt_dir);
    char *text = fs_read_file(path, NULL);
    int r;
    if (!text)
        r = rt_error(err, errlen, NULL, "%s: cannot read: %s", path, strerror(errno));
    else
        r = run_config_load_saved(rc, text, path, err, errlen);
    rt_free(text);
    rt_free(path);
    return r;
}

int checkpoint_find_tokenizer(const char *ckpt_dir, char **path, char *err, size_t errlen) {
    *path = NULL;
    char *spath = rt_sprintf("%s/trainer_state.json", ckpt_dir), hex[65];
    json_t *j = json_load_file(spath, JSON_REJECT_DUPLICATES, NULL);
    const json_t *rec = json_object_get(j, "tokenizer");
    const char *abs = json_string_value(json_object_get(rec, "path"));
    const char *sha = json_string_value(json_object_get(rec, "sha256"));
    const char *copy = json_string_value(json_object_get(rec, "copy"));
    RunConfig rc;
    int r = 0;
    if (json_is_null(rec)) {
        r = rt_error(err, errlen, NULL, "%s names no tokenizer (its run had no data.tokenizer)",
                     ckpt_dir);
    } else if (copy && !strchr(copy, '/')) {
        *path = rt_sprintf("%s/%s", ckpt_dir, copy);
    } else if (abs && sha) {
        if (!fs_exists(abs))
            r = rt_error(err, errlen, NULL, "the tokenizer %s that %s records is not there", abs,
                         spath);
        else if (sha256_file(abs, hex, err, errlen))
            r = -1;
        else if (strcmp(hex, sha))
            r = rt_error(
                err, errlen, NULL,
                "the tokenizer %s has sha256 %s, but the run trained with one of sha256 %s (%s)",
                abs, hex, sha, spath);
        else
            *path = rt_strdup(abs);
    } else if (rec) {
        r = rt_error(err, errlen, NULL, "%s: \"tokenizer\" is not {\"path\", \"sha256\", \"copy\"}",
                     spath);
    } else if (checkpoint_read_config(ckpt_dir, &rc, err, errlen)) { /* written before the record */
        r = -1;
    } else if (!rc.data.tokenizer[0]) {
        r = rt_error(err, errlen, NULL,
                     "%s names no tokenizer (its rotor.ini has no data.tokenizer)", ckpt_dir);
    } else if (!fs_exists(rc.data.tokenizer)) {
        r = rt_error(err, errlen, NULL,
                     "%s/rotor.ini: data.tokenizer = %s is not found from here%s", ckpt_dir,
                     rc.data.tokenizer,
                     rc.data.tokenizer[0] == '/' ? "" : " (relative to where the run trained)");
    } else {
        *path = rt_strdup(rc.data.tokenizer);
    }
    json_decref(j);
    rt_free(spath);
    return r;
}
