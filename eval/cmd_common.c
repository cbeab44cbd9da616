#include "cmd_common.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "device/device.h"
#include "train/checkpoint.h"

Model *cmd_load_model(const char *ckpt, const char *device, int verify, char **dir) {
    struct stat sb;
    if (stat(ckpt, &sb)) rt_die("--ckpt %s: %s", ckpt, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) rt_die("--ckpt %s: not a directory", ckpt);
    char err[2048], *cfg = rt_sprintf("%s/config.json", ckpt),
                    *sub = rt_sprintf("%s/checkpoints", ckpt);
    if (!stat(cfg, &sb)) {
        *dir = rt_strdup(ckpt);
    } else if (!stat(sub, &sb) && S_ISDIR(sb.st_mode)) { /* a run directory */
        if (checkpoint_find_latest(ckpt, verify, dir, err, sizeof err)) rt_die("--ckpt %s", err);
        if (!*dir) rt_die("--ckpt %s: a run directory without checkpoints", ckpt);
        fprintf(stderr, "--ckpt %s: its latest intact checkpoint, %s\n", ckpt, *dir);
        verify = 0; /* checked just now */
    } else {
        rt_die("--ckpt %s: neither a checkpoint directory (config.json) nor a run directory "
               "(checkpoints/); checkpoints are RUN_DIR/checkpoints/step_NNNNNNNN",
               ckpt);
    }
    rt_free(cfg);
    rt_free(sub);
    Model *m =
        checkpoint_load_model(*dir, backend_select(device, "--device"), verify, err, sizeof err);
    if (!m)
        rt_die("%s%s", err,
               verify ? " (--no-verify loads the checkpoint without checking its files)" : "");
    return m;
}

Tokenizer *cmd_load_tokenizer(const char *ckpt, const char *path, const ModelConfig *mc,
                              int add_bos) {
    char err[2048], *found = NULL;
    if (!path && checkpoint_find_tokenizer(ckpt, &found, err, sizeof err))
        rt_die("%s: give --tokenizer MODEL", err);
    if (!path) path = found;
    Tokenizer *tok = tok_load(path, err, sizeof err);
    if (!tok) rt_die("%s", err);
    if (tok_vocab_size(tok) > mc->vocab_size)
        rt_die("tokenizer %s has %d pieces, more than the model's vocabulary of %d", path,
               tok_vocab_size(tok), mc->vocab_size);
    if (add_bos && tok_bos_id(tok) != mc->bos_id)
        rt_die("tokenizer %s has BOS id %d, the model was trained with %d", path, tok_bos_id(tok),
               mc->bos_id);
    rt_free(found);
    return tok;
}

char *cmd_decode(const Tokenizer *tok, const int32_t *ids, int n) {
    char err[1024];
    char *text = tok_decode(tok, ids, (size_t)n, err, sizeof err);
    if (!text) rt_die("%s", err);
    return text;
}

char *cmd_completion_text(const Tokenizer *tok, const int32_t *seq, int n_prompt, int n,
                          const char *prompt_text) {
    char *all = cmd_decode(tok, seq, n_prompt + n);
    size_t np = strlen(prompt_text);
    if (strncmp(all, prompt_text, np)) {
        free(all);
        return cmd_decode(tok, seq + n_prompt, n);
    }
    memmove(all, all + np, strlen(all + np) + 1);
    return all;
}
