# Sourced by scripts/compare_kernels.sh and scripts/kernel_report.sh.
# kernel_tus ROOT BUILD: the CUDA translation units of kernels/, one line each with the
# directory, the build's compile command and the file (tab-separated), from BUILD's
# compile_commands.json (BUILD is configured here to write it).
kernel_tus() {
    cmake -S "$1" -B "$2" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
    python3 - "$2/compile_commands.json" "$1/kernels/" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].startswith(sys.argv[2]) and e["file"].endswith(".cu"):
        print(e["directory"] + "\t" + e["command"] + "\t" + e["file"])
PY
}
