#include "data/datasource.h"

#include <string.h>

#include "util/error.h"

DataSource *datasource_open(const char *spec, const RunConfig *rc, const DataOptions *opt,
                            char *err, size_t errlen) {
    static const char prefix[] = "synthetic:";
    if (!strncmp(spec, prefix, sizeof prefix - 1))
        return synthetic_open(spec + sizeof prefix - 1, &rc->model, opt, err, errlen);
    RT_ASSERT(strcmp(spec, "task")); /* task/task.h: task_source_open */
    return shard_source_open(spec, &rc->data, &rc->model, opt, err, errlen);
}

void datasource_free(DataSource *ds) {
    if (ds) ds->destroy(ds);
}

void windows_to_batch(const int32_t *win, const uint8_t *win_doc, int B, int T, int32_t *tokens,
                      int32_t *labels, uint8_t *doc_start) {
    for (int b = 0; b < B; b++) {
        size_t w = (size_t)b * (T + 1), o = (size_t)b * T;
        memcpy(tokens + o, win + w, sizeof(int32_t) * (size_t)T);
        memcpy(labels + o, win + w + 1, sizeof(int32_t) * (size_t)T);
        if (win_doc && doc_start) memcpy(doc_start + o, win_doc + w, (size_t)T);
    }
}
