/* The subcommands src/cli/ implements beside main.c (the others are in eval/ and data_tools/). */
#ifndef ROTOR_CLI_COMMANDS_H
#define ROTOR_CLI_COMMANDS_H

/* `rotor synth CONFIG.ini [--set ...]` (synth_cmd.c): trains on the [task] section's task, then
 * evaluates on its test split. Returns the exit status. */
int synth_main(int argc, char **argv);

#endif
