#!/usr/bin/env bash
# Compares the machine code of every CUDA kernel before and after a refactor of kernels/,
# for a change that should leave the arithmetic alone (no GPU needed).
#
#   scripts/compare_kernels.sh dump OUT [BUILD [FILE...]]   compile each kernels/ translation
#       unit (or only the FILEs given, e.g. kernels/ops/gla.cu) with the build's own command
#       (BUILD's compile_commands.json, default build/; configured here), keeping the PTX of
#       each virtual arch and the sm_90a SASS, and write them per function to
#       OUT/{ptx_compute_90a,ptx_compute_80,sass_sm_90a}.json (`split OUT` redoes only this
#       last step)
#   scripts/compare_kernels.sh diff BEFORE AFTER [RENAMES]  compare two dumps function by
#       function: by mangled name, then a function gone and one new with the same code (a
#       rename), then the pairs "before-name after-name" of the file RENAMES; print which are
#       identical, which differ (their diffs in AFTER/diffs/), and which are only in one of
#       them; exit status 1 if any differ
#
# Normalised away: comments, line info (.loc, .file, the .debug sections), the per-file hash
# in the names of anonymous namespaces and internal symbols, the numbering of PTX labels and
# local depots (global in a module), and everything of the SASS but its instructions; their
# encodings (the control bits: the schedule) are compared apart. cuobjdump and nvdisasm
# must be on PATH (or NVDISASM_PATH set); where the toolkit lacks them, the PyPI packages
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm bring them (nvidia/cu13/bin).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}

case "$cmd" in
dump)
    out=${2:?usage: compare_kernels.sh dump OUT [BUILD]}
    build=${3:-$root/build}
    command -v cuobjdump >/dev/null || { echo "cuobjdump not on PATH" >&2; exit 2; }
    mkdir -p "$out"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # shellcheck source=lib/kernel_tus.sh
    . "$root/scripts/lib/kernel_tus.sh"
    kernel_tus "$root" "$build" >"$work/tus"
    if (($# > 3)); then # only the FILEs given
        for f in "${@:4}"; do
            f=$(realpath "$f")
            awk -F'\t' -v f="$f" '$3 == f' "$work/tus"
        done >"$work/only"
        (($(wc -l <"$work/only") == $# - 3)) || { echo "not all of ${*:4} are kernels/ translation units of $build" >&2; exit 2; }
        mv "$work/only" "$work/tus"
    fi
    while IFS=$'\t' read -r dir command file; do
        name=$(basename "$file" .cu)
        keep="$work/$name"
        mkdir -p "$keep"
        # the build's command, its object in the keep folder
        command=$(sed -E "s# -o [^ ]+# -o $keep/$name.o#" <<<"$command")
        echo "compiling $file"
        (cd "$dir" && eval "$command --keep --keep-dir $keep")
        for ptx in "$keep"/*.ptx; do cp "$ptx" "$out/$(basename "$ptx")"; done
        cuobjdump -sass "$keep/$name.o" >"$out/$name.sass"
    done <"$work/tus"
    "$0" split "$out"
    ;;
split)
    out=${2:?usage: compare_kernels.sh split OUT}
    python3 - "$out" <<'EOF'
import glob, hashlib, json, os, re, sys

out = sys.argv[1]
ANON = re.compile(r"(_GLOBAL__N_|_INTERNAL)_[0-9a-f]")

def unhash(text):
    """<len>_GLOBAL__N__<hash>_<n>_<file>_<hash> (an anonymous namespace) -> _GLOBAL__N_, and
    <len>_INTERNAL_<hash>_<n>_<file>_<hash> (internal linkage) -> _INTERNAL_."""
    res, pos = [], 0
    for m in ANON.finditer(text):
        if m.start() < pos:
            continue
        j = m.start()
        while j > pos and text[j - 1].isdigit():
            j -= 1
        digits = text[j:m.start()]
        for k in range(len(digits)):  # the length is a suffix of the digits before it
            n = int(digits[k:])
            body = text[m.start():m.start() + n]
            if re.fullmatch(r"(_GLOBAL__N_|_INTERNAL)_[0-9a-f]+_\d+_\w+_[0-9a-f]+", body):
                res += [text[pos:j + k], m.group(1) + ("" if m.group(1).endswith("_") else "_")]
                pos = m.start() + n
                break
    res.append(text[pos:])
    return "".join(res)

def renumber(text):
    """PTX labels and depots are numbered across the module: number them per function."""
    seen = {}
    def sub(m):
        key = m.group(0)
        if key not in seen:
            seen[key] = "%s%d" % (m.group(1), len(seen))
        return seen[key]
    return re.sub(r"(\$L__[A-Za-z_]+?|__local_depot)\d+(?:_\d+)?", sub, text)

def split_ptx(path):
    funcs, module = {}, []
    lines = open(path).read().split("\n")
    i = 0
    head = re.compile(r"^(\.visible |\.weak |\.extern )*\.(entry|func)\b")
    while i < len(lines):
        line = lines[i]
        if head.match(line):
            block = []
            while not lines[i].strip() in ("{", ";") and not lines[i].rstrip().endswith(";"):
                block.append(lines[i])
                i += 1
            if lines[i].strip() != "{":  # a declaration
                block.append(lines[i])
                module += block
                i += 1
                continue
            depth = 0
            while True:
                block.append(lines[i])
                depth += lines[i].count("{") - lines[i].count("}")
                i += 1
                if depth == 0:
                    break
            name = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", " ".join(block)).group(1)
            funcs[name] = block
        else:
            module.append(line)
            i += 1
    def clean(block):
        kept, debug = [], False
        for l in block:
            if l.strip().startswith(".section") and ".debug" in l:
                debug = True  # line info: a section until its closing brace
            elif debug:
                debug = l.strip() != "}"
            elif l.strip() and not re.match(r"\s*(//|\.loc\b|\.file\b)", l):
                kept.append(l)
        return renumber(unhash("\n".join(kept)))
    return {unhash(n): clean(b) for n, b in funcs.items()}, clean(module)

def split_sass(path):
    funcs, name, body, control = {}, None, [], []
    def close():
        if name is not None:
            funcs[name] = ("\n".join(body), "".join(control))
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            close()
            name, body, control = unhash(m.group(1)), [], []
            continue
        if name is None:
            continue
        inst = re.match(r"\s*(/\*[0-9a-f]{4,}\*/)\s*(.*?)\s*/\* (0x[0-9a-f]+) \*/", line)
        if inst:
            body.append(inst.group(1) + " " + unhash(inst.group(2)))
            control.append(inst.group(3))
        elif re.match(r"\s*/\* (0x[0-9a-f]+) \*/", line):
            control.append(line.strip())
    close()
    return funcs

def add(table, key, value, tu):
    if key in table and table[key] != value:
        key = "%s@%s" % (key, tu)  # the same name with other code in another file
    table[key] = value

for arch in ("compute_90a", "compute_80"):
    table = {}
    for path in sorted(glob.glob(os.path.join(out, "*.%s.ptx" % arch))):
        tu = os.path.basename(path).split(".")[0]
        funcs, module = split_ptx(path)
        for n, text in funcs.items():
            add(table, n, text, tu)
        add(table, "(module %s)" % tu, module, tu)
    json.dump(table, open(os.path.join(out, "ptx_%s.json" % arch), "w"), indent=0, sort_keys=True)
table = {}
for path in sorted(glob.glob(os.path.join(out, "*.sass"))):
    tu = os.path.basename(path)[:-5]
    for n, (text, control) in split_sass(path).items():
        add(table, n, {"sass": text, "control": hashlib.sha1(control.encode()).hexdigest()}, tu)
json.dump(table, open(os.path.join(out, "sass_sm_90a.json"), "w"), indent=0, sort_keys=True)
for name in ("ptx_compute_90a", "ptx_compute_80", "sass_sm_90a"):
    print("%s: %d functions" % (name, len(json.load(open(os.path.join(out, name + ".json"))))))
EOF
    ;;
diff)
    before=${2:?usage: compare_kernels.sh diff BEFORE AFTER [RENAMES]}
    after=${3:?usage: compare_kernels.sh diff BEFORE AFTER [RENAMES]}
    python3 - "$before" "$after" "${4:-}" <<'EOF'
import difflib, hashlib, json, os, sys

before, after, renames = sys.argv[1], sys.argv[2], sys.argv[3]
diffs = os.path.join(after, "diffs")
os.makedirs(diffs, exist_ok=True)
pairs = [l.split() for l in open(renames) if l.strip()] if renames else []

def text(v, name):
    """The code of a function (SASS: without control bits), its own name replaced."""
    return (v["sass"] if isinstance(v, dict) else v).replace(name, "@")

status = 0
for name in ("ptx_compute_90a", "ptx_compute_80", "sass_sm_90a"):
    a = json.load(open(os.path.join(before, name + ".json")))
    b = json.load(open(os.path.join(after, name + ".json")))
    # (before, after) name pairs: the same name, then renamed functions with the same code,
    # then the pairs given in RENAMES
    match = [(k, k) for k in sorted(set(a) & set(b))]
    gone, new = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    by_code = {}
    for k in new:
        by_code.setdefault(text(b[k], k), []).append(k)
    for k in list(gone):
        hits = by_code.get(text(a[k], k))
        if hits:
            match.append((k, hits.pop(0)))
            gone.remove(k)
            new.remove(match[-1][1])
    for x, y in pairs:
        if x in gone and y in new:
            match.append((x, y))
            gone.remove(x)
            new.remove(y)
    same, control, differ = [], [], []
    for k, l in match:
        x, y = text(a[k], k), text(b[l], l)
        label = k if k == l else "%s -> %s" % (k, l)
        if x != y:
            differ.append(label)
            f = "%s-%s.diff" % (name, hashlib.sha1(label.encode()).hexdigest()[:10])
            with open(os.path.join(diffs, f), "w") as o:
                o.write(label + "\n")
                o.writelines(difflib.unified_diff([s + "\n" for s in x.split("\n")],
                                                  [s + "\n" for s in y.split("\n")],
                                                  "before", "after", n=2))
        elif isinstance(a[k], dict) and a[k]["control"] != b[l]["control"]:
            control.append(label)
        else:
            same.append(label)
    print("%s: %d compared, %d identical, %d differ only in control bits, %d differ; "
          "%d only before, %d only after"
          % (name, len(match), len(same), len(control), len(differ), len(gone), len(new)))
    for k in same:
        if " -> " in k:
            print("  renamed, identical: " + k)
    for k in control:
        print("  control bits only: " + k)
    for k in differ:
        print("  differs: %s (diffs/%s-%s.diff)"
              % (k, name, hashlib.sha1(k.encode()).hexdigest()[:10]))
    for k in gone:
        print("  only before: " + k)
    for k in new:
        print("  only after: " + k)
    if differ or gone or new:
        status = 1
sys.exit(status)
EOF
    ;;
*)
    sed -n '2,21p' "$0" >&2
    exit 2
    ;;
esac
