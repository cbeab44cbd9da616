/* `rotor data SUBCOMMAND ...`: dispatch to tokenize, inspect and train-tokenizer. */
#include <stdio.h>
#include <string.h>

#include "data_tools.h"
#include "dt_common.h"
#include "util/error.h"
#include "util/options.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rotor data <subcommand> [options]\n\n"
               "subcommands:\n"
               "  tokenize --tokenizer MODEL --out DIR [options] INPUT...\n"
               "        tokenise JSONL (.gz, .zst) or text files into HDF5 token shards\n"
               "  inspect PATH... [--tokenizer MODEL] [--sample N]\n"
               "        validate token shards (files, directories, globs) and summarise them\n"
               "  train-tokenizer --out PREFIX --vocab-size N [options] INPUT...\n"
               "        train a SentencePiece tokenizer (PREFIX.model, PREFIX.vocab)\n\n"
               "`rotor data <subcommand> --help` describes its options.\n");
}

int data_main(int argc, char **argv) {
    if (argc < 1) {
        usage(stderr);
        rt_die("missing subcommand after 'rotor data'");
    }
    const char *cmd = argv[0];
    if (opt_is_help(cmd) || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "tokenize")) return dt_tokenize_main(argc, argv);
    if (!strcmp(cmd, "inspect")) return dt_inspect_main(argc, argv);
    if (!strcmp(cmd, "train-tokenizer")) return dt_train_tokenizer_main(argc, argv);
    static const char *const known[] = {"tokenize", "inspect", "train-tokenizer", NULL};
    opt_die_unknown_word("data", "data subcommand", cmd, known);
}
