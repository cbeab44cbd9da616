#!/usr/bin/env bash
# Every repository path README.md, docs/*.md, docs/notebook/*.md and docs/results/*.md name
# (src/..., kernels/..., tests/..., scripts/..., bench/..., configs/..., eval/..., data_tools/...,
# tokenizer/..., python/...)
# exists: as written, or as a program's source (P.c, P.cu, P.sh, P.py). Names with a
# placeholder (an upper-case word such as MODEL, a brace or glob pattern, a trailing _) and
# paths inside another repository (preceded by a '/', as in x/src/y) are not checked.
# Fails naming each missing path and the page that cites it.
set -euo pipefail
cd "$(dirname "$0")/.."
# programs since renamed, named by dated entries of the GPU notebook (bench/gpu_step is
# today's bench/step_bench)
renamed=" bench/gpu_step "
missing=0
for page in README.md docs/*.md docs/notebook/*.md docs/results/*.md; do
    while read -r p; do
        case "$p" in *'{'* | *'*'* | *_ | *[A-Z][A-Z]*) continue ;; esac
        [[ $renamed == *" $p "* ]] && continue
        for cand in "$p" "$p.c" "$p.cu" "$p.sh" "$p.py"; do
            [ -e "$cand" ] && continue 2
        done
        echo "FAIL $page cites $p, which does not exist"
        missing=1
    done < <(grep -ohE '(^|[^/A-Za-z0-9_.-])(src|kernels|tests|scripts|bench|configs|eval|data_tools|tokenizer|python)/[A-Za-z0-9_./{},*-]*[A-Za-z0-9_*}]' "$page" |
             sed -E 's#^[^a-z]##' | sort -u)
done
[ "$missing" = 0 ] && echo "every path the docs cite exists"
exit "$missing"
