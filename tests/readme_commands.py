#!/usr/bin/env python3
"""The README's commands still work: every line of the README's code blocks that runs `rotor`
(`build/rotor`, also after `mpirun ...`) or a script under `scripts/` (also after `sbatch ...`)
names a command that exists, with options its `--help` lists, and configs that load.

- `rotor SUB ...` (and `rotor data SUB ...`): `rotor SUB --help` succeeds and mentions every
  `--option` of the line; a config under configs/ loads with the line's `--set` overrides
  (`rotor info CONFIG --set ...`, which allocates nothing).
- `scripts/X ...`: the script exists and is executable; its text mentions every `--option`
  (for the launchers, whose options are `rotor train`'s, `rotor train --help` does), a config
  it is given loads, and an experiment `scripts/reproduce.sh` is given has its script.
Names in capitals (CONFIG.ini, DIR) are placeholders: their options are checked, not the paths.

usage: readme_commands.py ROTOR [README.md]
       readme_commands.py ROTOR --selftest   (the checker fails on a README with bad commands)
"""
import os, re, shlex, subprocess, sys

rotor = os.path.abspath(sys.argv[1])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.argv[2:] == ["--selftest"]:
    import tempfile
    bad = ["build/rotor generate --ckpt runs/x --prompt hi --max-new-tokenz 5",
           "build/rotor train configs/tiny/no-such-config.ini",
           "build/rotor info configs/tiny/gla-selective.ini --set model.no_such_key=1",
           "build/rotor no-such-command --ckpt runs/x",
           "scripts/reproduce.sh no-such-experiment --scale cpu",
           "scripts/launch_local.sh 2 configs/tiny/gla-selective.ini --resum auto",
           "scripts/no-such-script.sh"]
    with tempfile.TemporaryDirectory() as tmp:
        for cmd in bad:
            path = os.path.join(tmp, "README.md")
            with open(path, "w") as f:
                f.write("# x\n\n```sh\n" + cmd + "\n```\n")
            p = subprocess.run([sys.executable, os.path.abspath(__file__), rotor, path], capture_output=True, text=True)
            if p.returncode == 0 or "FAIL" not in p.stdout:
                print(f"FAIL the checker accepted `{cmd}`:\n{p.stdout}{p.stderr}")
                sys.exit(1)
            print(f"refused as it should: {cmd}\n  {p.stdout.strip().splitlines()[0]}")
    sys.exit(0)
readme = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(root, "README.md")
os.chdir(root)
LAUNCHERS = {"scripts/launch_local.sh", "scripts/launch_multinode.sh", "scripts/slurm.sbatch"}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")
failures, checked = [], 0
help_cache = {}


def helptext(*sub):
    if sub not in help_cache:
        p = subprocess.run([rotor, *sub, "--help"], capture_output=True, text=True)
        help_cache[sub] = (p.returncode, p.stdout + p.stderr)
    return help_cache[sub]


def commands(path):
    """(line number, command text) of every line in a fenced code block, continuations joined."""
    fence, out, cont, start = False, [], "", 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fence, cont = not fence, ""
            continue
        if not fence:
            continue
        text = line.rstrip("\n")
        if not cont:
            start = n
        if text.endswith("\\"):
            cont += text[:-1] + " "
            continue
        out.append((start, cont + text))
        cont = ""
    return out


def strip_launcher(words):
    """The words after `mpirun [options]` or `sbatch [options]`."""
    takes_value = {"-np", "-n", "-x", "-H", "--host", "--hostfile", "--map-by", "--bind-to"}
    if words and words[0] in ("mpirun", "mpiexec", "sbatch", "srun"):
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in takes_value else 1
        return words[i:]
    return words


def placeholder(word):
    return bool(re.search(r"[A-Z]{2,}", word)) or "[" in word or "|" in word


def check_config(n, config, sets):
    global checked
    if placeholder(config) or not config.startswith("configs/"):
        return
    if not os.path.isfile(config):
        failures.append(f"README.md:{n}: {config} does not exist")
        return
    args = [rotor, "info", config]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    checked += 1
    if p.returncode != 0:
        failures.append(f"README.md:{n}: `rotor info {config} {' '.join('--set ' + s for s in sets)}` failed: "
                        + (p.stderr.strip().splitlines() or ["?"])[-1])


def sets_of(words):
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--set"]


def check_rotor(n, line, words):
    global checked
    sub = words[1:2]
    if sub == ["data"]:
        sub = words[1:3]
    if not sub or sub[-1].startswith("-"):
        return
    rc, text = helptext(*sub)
    checked += 1
    if rc != 0:
        failures.append(f"README.md:{n}: `rotor {' '.join(sub)} --help` failed (no such command?)")
        return
    for opt in OPTION.findall(line):
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
            failures.append(f"README.md:{n}: `rotor {' '.join(sub)} --help` does not list {opt}")
    if sub[0] in ("train", "info", "synth"):
        configs = [w for w in words[2:] if w.endswith(".ini")]
        if configs:
            check_config(n, configs[0], sets_of(words))


def check_script(n, line, words):
    global checked
    script = words[0]
    checked += 1
    if not (os.path.isfile(script) and os.access(script, os.X_OK)):
        failures.append(f"README.md:{n}: {script} does not exist or is not executable")
        return
    if script in LAUNCHERS:
        rc, text = helptext("train")
        where = "`rotor train --help`"
    else:
        text, where = open(script, encoding="utf-8").read(), script
    for opt in OPTION.findall(line):
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
            failures.append(f"README.md:{n}: {where} knows no option {opt}")
    configs = [w for w in words[1:] if w.endswith(".ini")]
    if configs:
        check_config(n, configs[0], sets_of(words))
    if script == "scripts/reproduce.sh":
        exp = next((w for w in words[1:] if not w.startswith("-")), None)
        groups = {"all", "selective-rope", "rotrnn", "nnrnn"}
        for e in (exp.split(",") if exp and not placeholder(exp) else []):
            if e not in groups and not os.path.isfile(f"scripts/experiments/{e}.sh"):
                failures.append(f"README.md:{n}: scripts/reproduce.sh has no experiment {e}")


seen = 0
for n, line in commands(readme):
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        continue
    words = strip_launcher([w for w in words if w != "&"])
    if not words:
        continue
    if words[0] in ("rotor", "build/rotor"):
        seen += 1
        check_rotor(n, " ".join(words), words)
    elif words[0].startswith("scripts/"):
        seen += 1
        check_script(n, " ".join(words), words)

if seen == 0:
    failures.append("no rotor or scripts/ command found in the README's code blocks")
for f in failures:
    print("FAIL " + f)
if not failures:
    print(f"{seen} README commands checked ({checked} checks)")
sys.exit(1 if failures else 0)
