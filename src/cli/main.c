/* rotor: the single entry point, with subcommands (docs/formats.md "Commands"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "config/run_config.h"
#include "cpu/blas_setup.h"
#include "data_tools.h"
#include "dist/dist.h"
#include "eval_run.h"
#include "train_eval.h"
#include "model/hf_config.h"
#include "model/model.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/options.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "rotor %s: language-model pretraining with Selective RoPE. Mixers (model.type): GLA,\n"
        "          Gated DeltaNet, FoX, Transformer, DeltaNet, Mamba2, LRU, RotRNN, and the\n"
        "          RNN, orthogonal RNN, expRNN, nnRNN and LSTM cells; position embeddings\n"
        "          (pe.type): NoPE, RoPE, Selective RoPE.\n\n"
        "usage: rotor <command> [options]\n\n"
        "commands:\n"
        "  train CONFIG.ini [--set section.key=value]... [--resume auto|DIR]\n"
        "        train a model; metrics, plots and checkpoints go to run.dir\n"
        "  info CONFIG.ini [--set section.key=value]... [--config-json PATH] [--write-config "
        "PATH]\n"
        "        print the model's dimensions and parameter counts (and its config.json)\n"
        "  data tokenize --tokenizer MODEL --out DIR INPUT...\n"
        "        tokenise JSONL (.gz, .zst) or text files into HDF5 token shards\n"
        "  data inspect PATH... [--tokenizer MODEL]\n"
        "        validate token shards and summarise them\n"
        "  data train-tokenizer --out PREFIX --vocab-size N INPUT...\n"
        "        train a SentencePiece tokenizer for a corpus that has none\n"
        "  eval --ckpt DIR --tasks TASK[,TASK...] --data-dir DIR [options]\n"
        "        zero-shot evaluation (LAMBADA, PIQA, HellaSwag, WinoGrande, ARC) as\n"
        "        lm-evaluation-harness scores it\n"
        "  generate --ckpt DIR (--prompt TEXT | --prompts FILE.jsonl) [options]\n"
        "        continue prompts with a checkpoint's model (greedy or sampled)\n"
        "  serve --ckpt DIR [--port N] [options]\n"
        "        serve a checkpoint over HTTP with OpenAI's completions API (for\n"
        "        lm-evaluation-harness's local-completions model and OpenAI clients)\n"
        "  synth CONFIG.ini [--set section.key=value]...\n"
        "        train on a task (synthetic: MQAR, state tracking, copying, MAD, nnRNN's copy\n"
        "        memory; classification: pixel sequences, ListOps, byte-level text, Pathfinder,\n"
        "        AAN pairs; character-level text) and evaluate it on its test split\n"
        "  version\n"
        "        print the version\n\n"
        "`rotor <command> --help` describes a command and its options.\n",
        ROTOR_VERSION);
}

static void train_usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor train CONFIG.ini [--set section.key=value]... [--resume auto|DIR] "
        "[--overwrite]\n\n"
        "  --set section.key=value  override one config key (repeatable, applied in order)\n"
        "  --resume auto            continue from the newest intact checkpoint in run.dir\n"
        "                           (start fresh if there is none; fail if none of them is "
        "intact)\n"
        "  --resume DIR             continue from the checkpoint directory DIR\n"
        "  --no-verify              resume without checking the checkpoint files' sha256s\n"
        "  --overwrite              start fresh even if run.dir holds a run: the old run is moved\n"
        "                           aside to RUN_DIR.old-YYYYMMDD-HHMMSS, never deleted\n\n");
    run_config_print_help(f);
}

static void info_usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor info CONFIG.ini [--set section.key=value]... [--config-json PATH] "
        "[--write-config PATH]\n"
        "       rotor info --keys-markdown\n\n"
        "Prints the model summary and parameter counts without allocating the model.\n"
        "  --config-json PATH   also write the model's Hugging Face config.json to PATH\n"
        "  --write-config PATH  also write the effective config (every key the model and task\n"
        "                       read, defaults included) as INI to PATH\n"
        "  --keys-markdown      print every config key (the list of `rotor train --help`) as the\n"
        "                       markdown of docs/config-keys.md, and exit (no CONFIG.ini)\n");
}

typedef struct {
    const char *config;
    const char *sets[256];
    int nsets;
    TrainStart start;         /* train */
    const char *config_json;  /* info */
    const char *write_config; /* info */
} Args;

/* Parses CONFIG [--set k=v]... plus --resume X, --no-verify, --overwrite (train) or --config-json /
 * --write-config PATH (info). */
static void parse_args(int argc, char **argv, Args *a, int is_train, void (*help)(FILE *)) {
    const char *cmd = is_train ? "train" : "info";
    memset(a, 0, sizeof(*a));
    static const char *const opts_train[] = {"--set",       "--resume", "--no-verify",
                                             "--overwrite", "--help",   NULL};
    static const char *const opts_info[] = {"--set",           "--config-json", "--write-config",
                                            "--keys-markdown", "--help",        NULL};
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i], *v;
        if (opt_is_help(s)) {
            help(stdout);
            exit(0);
        } else if ((v = opt_value(cmd, argc, argv, &i, "--set"))) {
            if (a->nsets == 256) rt_die("too many --set options (at most 256)");
            a->sets[a->nsets++] = v;
        } else if (is_train && (v = opt_value(cmd, argc, argv, &i, "--resume"))) {
            a->start.resume = v;
        } else if (is_train && !strcmp(s, "--no-verify")) {
            a->start.no_verify = 1;
        } else if (is_train && !strcmp(s, "--overwrite")) {
            a->start.overwrite = 1;
        } else if (!is_train && (v = opt_value(cmd, argc, argv, &i, "--config-json"))) {
            a->config_json = v;
        } else if (!is_train && (v = opt_value(cmd, argc, argv, &i, "--write-config"))) {
            a->write_config = v;
        } else if (!is_train && !strcmp(s, "--keys-markdown")) {
            run_config_print_markdown(stdout);
            exit(ferror(stdout) || fflush(stdout) ? 1 : 0);
        } else if (s[0] == '-') {
            opt_die_unknown(cmd, s, is_train ? opts_train : opts_info);
        } else if (!a->config) {
            a->config = s;
        } else {
            rt_die("unexpected argument '%s': give one CONFIG.ini (overrides go through --set)", s);
        }
    }
    if (!a->config) {
        help(stderr);
        rt_die("missing CONFIG.ini");
    }
    if (a->start.resume && a->start.overwrite)
        rt_die("--resume and --overwrite cannot be used together: --overwrite starts afresh");
    if (a->start.no_verify && !a->start.resume)
        rt_die("--no-verify applies to --resume: give --resume auto|DIR");
}

static void load_config(const Args *a, RunConfig *rc) {
    char err[2048];
    if (run_config_load(rc, a->config, a->sets, a->nsets, err, sizeof err)) rt_die("%s", err);
}

static int cmd_train(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a, 1, train_usage);
    RunConfig rc;
    load_config(&a, &rc);
    /* a run a signal stopped exits 0 too: its checkpoint is written and --resume auto goes on
     * (scripts/slurm.sbatch requeues it on the message) */
    a.start.eval = &TRAIN_EVAL;
    train_run(&rc, &a.start);
    dist_finalize();
    return 0;
}

static int cmd_info(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a, 0, info_usage);
    RunConfig rc;
    load_config(&a, &rc);
    ModelDims dm;
    const char *err = model_dims(&rc.model, &dm);
    if (err) rt_die("%s", err);
    int64_t total, non_embedding;
    model_count_params(&rc.model, &total, &non_embedding);
    model_print_summary(&rc.model, &dm, total, non_embedding);
    const TrainConfig *tc = &rc.train;
    const OptimizerSpec *os = optimizer_spec(tc->optimizer);
    const double GiB = 1024.0 * 1024.0 * 1024.0;
    int64_t N = (int64_t)tc->micro_batch * tc->seq_len;
    ModelMemory mm =
        model_memory(&rc.model, N, CUDA_ACT_SIZE, CUDA_F32_SIZE, os->nstate, tc->recompute);
    printf("GPU memory per rank at micro_batch %d x seq_len %d: %.2f GiB = weights, gradients "
           "and bf16 copy %.2f + %s %.2f (/ ranks with ZeRO-1) + activations %.2f saved "
           "+ %.2f scratch\n",
           tc->micro_batch, tc->seq_len,
           (double)(mm.weights + mm.optimizer + mm.saved + mm.scratch) / GiB,
           (double)mm.weights / GiB, os->name, (double)mm.optimizer / GiB, (double)mm.saved / GiB,
           (double)mm.scratch / GiB);
    printf("train.recompute:");
    static const struct {
        Recompute r;
        const char *name;
    } modes[] = {{RECOMPUTE_NONE, "none"},
                 {RECOMPUTE_DEFAULT, "default"},
                 {RECOMPUTE_MIXER, "mixer"},
                 {RECOMPUTE_BLOCK, "block"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        ModelMemory mr =
            model_memory(&rc.model, N, CUDA_ACT_SIZE, CUDA_F32_SIZE, os->nstate, modes[i].r);
        printf("%s %s %.2f GiB (activations %.2f)", i ? "," : "", modes[i].name,
               (double)(mr.weights + mr.optimizer + mr.saved + mr.scratch) / GiB,
               (double)(mr.saved + mr.scratch) / GiB);
    }
    printf("\n");
    if (a.config_json) {
        json_t *j = hf_config_to_json(&rc.model);
        if (json_dump_file(j, a.config_json, HF_CONFIG_JSON_FLAGS))
            rt_die("cannot write %s", a.config_json);
        json_decref(j);
    }
    if (a.write_config) {
        FILE *f = fopen(a.write_config, "w");
        if (!f) rt_die("cannot write %s: %s", a.write_config, strerror(errno));
        run_config_write_ini(&rc, f);
        if (fclose(f)) rt_die("cannot write %s: %s", a.write_config, strerror(errno));
    }
    return 0;
}

int main(int argc, char **argv) {
    /* OpenMP threads that spin while they wait collapse when another process takes a core
     * (rotor generate --threads 2 beside one busy core: 292 against 2410 tok/s with one
     * thread); sleeping ones cost little when the cores are free (docs/notebook/benchmarks.md,
     * "Serving"). libgomp reads OMP_WAIT_POLICY once, when it loads: unless the user chose,
     * rotor runs itself again with passive (OMP_WAIT_POLICY=active brings spinning back). */
    int set_policy = !getenv("OMP_WAIT_POLICY") && !setenv("OMP_WAIT_POLICY", "passive", 1);
    blas_select_kernels(
        argv); /* runs rotor again when it picks OpenBLAS's kernels: the policy goes along */
    if (set_policy)
        execv("/proc/self/exe", argv); /* returns only when it fails: libgomp's default then */
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (opt_is_help(cmd) || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("rotor %s\n", ROTOR_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "train")) {
        dist_init(&argc, &argv); /* rank and world from mpirun; rank 0 of 1 without it */
        return cmd_train(argc - 2, argv + 2);
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "data")) return data_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) {
        dist_init(&argc, &argv); /* documents split across the ranks under mpirun */
        int status = eval_main(argc - 2, argv + 2);
        dist_finalize();
        return status;
    }
    if (!strcmp(cmd, "generate")) return generate_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "serve")) return serve_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "synth")) {
        dist_init(&argc, &argv);
        int status = synth_main(argc - 2, argv + 2);
        dist_finalize();
        return status;
    }
    static const char *const commands[] = {"train", "info",  "data",    "eval", "generate",
                                           "serve", "synth", "version", NULL};
    opt_die_unknown_word(NULL, "command", cmd, commands);
}
