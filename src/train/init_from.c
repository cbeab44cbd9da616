#include "train/init_from.h"

#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "device/host_copy.h"
#include "io/safetensors.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fsutil.h"

enum { MAX_SHARDS = 256 };

typedef struct {
    int n;
    char *path[MAX_SHARDS];
    StFile *f[MAX_SHARDS];
} Shards;

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int add_shard(Shards *s, char *path, char *err, size_t errlen) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->path[i], path)) {
            rt_free(path);
            return 0;
        }
    if (s->n == MAX_SHARDS) {
        rt_free(path);
        return rt_error(err, errlen, NULL, "more than %d shards", MAX_SHARDS);
    }
    s->path[s->n++] = path;
    return 0;
}

/* The shard files of model.safetensors.index.json ({"weight_map": {tensor: file}}), in order
 * of first mention. */
static int index_shards(const char *dir, const char *index, Shards *s, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *j = json_load_file(index, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) return rt_error(err, errlen, index, "%s (line %d)", jerr.text, jerr.line);
    const json_t *map = json_object_get(j, "weight_map");
    int r = 0;
    if (!json_is_object(map) || !json_object_size(map))
        r = rt_error(err, errlen, index, "has no \"weight_map\" object of tensor names to files");
    const char *name;
    const json_t *file;
    json_object_foreach((json_t *)map, name, file) {
        const char *f = json_string_value(file);
        if (r) break;
        if (!f || !*f || strchr(f, '/'))
            r = rt_error(err, errlen, index, "weight_map.%s: expected a file name beside the index",
                         name);
        else
            r = add_shard(s, rt_sprintf("%s/%s", dir, f), err, errlen);
    }
    json_decref(j);
    return r;
}

/* The files to read and what they are. */
static int find_shards(const char *path, int hashes, Shards *s, char **what, char *err,
                       size_t errlen) {
    if (!is_dir(path)) {
        size_t n = strlen(path);
        if (n > 12 && !strcmp(path + n - 12, ".safetensors") && fs_exists(path)) {
            *what = rt_sprintf("%s", path);
            return add_shard(s, rt_strdup(path), err, errlen);
        }
        return rt_error(err, errlen, NULL, "%s: no such directory or .safetensors file", path);
    }
    char *state = rt_sprintf("%s/trainer_state.json", path),
         *ckdir = rt_sprintf("%s/checkpoints", path);
    char *index = rt_sprintf("%s/model.safetensors.index.json", path),
         *single = rt_sprintf("%s/model.safetensors", path);
    int r = 0;
    if (fs_exists(state)) {
        r = checkpoint_verify(path, hashes, err, errlen);
        if (!r) {
            *what = rt_sprintf("the checkpoint %s", path);
            r = add_shard(s, rt_strdup(single), err, errlen);
        }
    } else if (is_dir(ckdir)) {
        char *ckpt = NULL;
        r = checkpoint_find_latest(path, hashes, &ckpt, err, errlen);
        if (!r && !ckpt)
            r = rt_error(err, errlen, NULL, "%s: a run directory without a checkpoint", path);
        if (!r) {
            *what = rt_sprintf("the checkpoint %s (the run's latest)", ckpt);
            r = add_shard(s, rt_sprintf("%s/model.safetensors", ckpt), err, errlen);
        }
        rt_free(ckpt);
    } else if (fs_exists(index)) {
        r = index_shards(path, index, s, err, errlen);
        if (!r) *what = rt_sprintf("the %d shard%s of %s", s->n, s->n > 1 ? "s" : "", path);
    } else if (fs_exists(single)) {
        *what = rt_sprintf("%s", single);
        r = add_shard(s, rt_strdup(single), err, errlen);
    } else {
        r = rt_error(err, errlen, NULL,
                     "%s: neither a rotor checkpoint (trainer_state.json), a run directory "
                     "(checkpoints/) nor a "
                     "model directory (model.safetensors or model.safetensors.index.json)",
                     path);
    }
    rt_free(state);
    rt_free(ckdir);
    rt_free(index);
    rt_free(single);
    return r;
}

/* The tensor `name` in the shards (*in: its file), NULL if absent; an error if in two. */
static const StTensor *find_tensor(const Shards *s, const char *name, int *in, char *err,
                                   size_t errlen, int *r) {
    const StTensor *x = NULL;
    for (int i = 0; i < s->n && !*r; i++) {
        const StTensor *y = st_find(s->f[i], name);
        if (y && x)
            *r = rt_error(err, errlen, NULL, "tensor %s is in both %s and %s", name, s->path[*in],
                          s->path[i]);
        if (y && !x) {
            x = y;
            *in = i;
        }
    }
    return x;
}

/* Every parameter from the shards into w (t->total floats), with the checks above. */
static int read_params(const Shards *s, const ParamTable *t, float *w, char *err, size_t errlen) {
    int r = 0, used = 0;
    for (int i = 0; i < t->n && !r; i++) {
        const ParamInfo *p = &t->p[i];
        int in = 0;
        char want[128], got[128];
        st_format_shape(want, sizeof want, p->shape, p->ndim);
        const StTensor *x = find_tensor(s, p->name, &in, err, errlen, &r);
        if (r) break;
        if (!x) {
            r = rt_error(err, errlen, NULL, "tensor %s %s of the model is missing from %s%s",
                         p->name, want, s->path[0], s->n > 1 ? " and the other shards" : "");
            break;
        }
        st_format_shape(got, sizeof got, x->shape, x->ndim);
        int same = x->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = x->shape[d] == p->shape[d];
        if (!same)
            r = rt_error(err, errlen, NULL, "%s: tensor %s has shape %s, the model expects %s",
                         s->path[in], p->name, got, want);
        else if (!st_is_float(x->dtype))
            r = rt_error(err, errlen, NULL,
                         "%s: tensor %s has dtype %s (expected F32, BF16, F16 or F64)", s->path[in],
                         p->name, x->dtype);
        else
            st_read_f32(x, w + p->offset);
        used++;
    }
    for (int k = 0; k < s->n && !r; k++)
        for (int i = 0; i < st_count(s->f[k]) && !r; i++) {
            const StTensor *x = st_at(s->f[k], i);
            if (params_find(t, x->name) >= 0) continue;
            char got[128];
            st_format_shape(got, sizeof got, x->shape, x->ndim);
            r = rt_error(err, errlen, NULL,
                         "%s: tensor %s %s is not a parameter of the model (%d parameters matched)",
                         s->path[k], x->name, got, used);
        }
    return r;
}

int init_from_load(const char *path, Model *m, int hashes, char **what, char *err, size_t errlen) {
    Shards s = {0};
    *what = NULL;
    const ParamTable *t = model_params(m);
    float *w = NULL;
    int r = find_shards(path, hashes, &s, what, err, errlen);
    for (int i = 0; i < s.n && !r; i++)
        if (!(s.f[i] = st_open(s.path[i], err, errlen))) r = -1;
    if (!r) {
        w = rt_calloc((size_t)t->total, sizeof(float)); /* padding stays 0 */
        r = read_params(&s, t, w, err, errlen);
    }
    if (!r) r = params_check_finite(t, w, 0, t->total, *what, err, errlen);
    if (!r) backend_upload_f32(model_backend(m), model_weights_to_write(m), w, t->total);
    for (int i = 0; i < s.n; i++) {
        st_close(s.f[i]);
        rt_free(s.path[i]);
    }
    rt_free(w);
    if (r) {
        rt_free(*what);
        *what = NULL;
    }
    return r;
}
