/* `rotor data ...`: making and checking token shards (docs/formats.md "Token shards").
 *   rotor data tokenize --tokenizer MODEL --out DIR INPUT...
 *   rotor data inspect PATH... [--tokenizer MODEL]
 *   rotor data train-tokenizer --out PREFIX --vocab-size N INPUT... */
#ifndef ROTOR_DATA_TOOLS_H
#define ROTOR_DATA_TOOLS_H

/* argv[0] is the subcommand name ("tokenize", ...). Returns the process exit status. */
int data_main(int argc, char **argv);

#endif
