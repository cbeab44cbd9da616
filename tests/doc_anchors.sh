#!/usr/bin/env bash
# Every citation of a docs/models.md section names a section that exists. The page names its
# sections (<a id="<name>"></a> in each heading; GitHub's slugs of its headings count too), and
# the tree cites them by name: "docs/models.md §<name>" or a bare "§<name>" (a section sign and a
# lower-case name), or a link "models.md#<name>". Checked in src/, kernels/, eval/, data_tools/,
# tests/, scripts/, bench/, configs/, tokenizer/, python/, CMakeLists.txt, README.md and
# docs/ (not tests/data/, docs/notebook/gpu-results/: data and dated logs).
# A section sign followed by a digit is a numbered citation, which the names replaced, and
# fails, unless it cites a paper: "paper §", "paper's §", "supplement §" or "supplement's §"
# right before it, or a row of tests/paper_values/ (whose last column is the paper's place).
# Fails naming each file:line and the name (or number) it cites.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
page=docs/models.md
[ -f "$page" ] || { echo "FAIL $page does not exist"; exit 1; }

# GitHub's heading slug: the heading's text without its HTML tags, lower-cased, every
# character but letters, digits, spaces, '-' and '_' dropped, spaces to '-' (ASCII letters
# only here: a heading with other letters would need them kept); a repeated slug gets -1, -2.
slugs() {
    awk '/^[ ]*(```|~~~)/ { fence = !fence; next } !fence && /^##?#?#?#?#? / { print }' "$1" |
        sed -E 's/^#+ +//; s/ +#+ *$//; s/<[^>]*>//g' | tr 'A-Z' 'a-z' |
        sed -E 's/[^a-z0-9 _-]//g; s/ /-/g' |
        awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}
anchors=" $( (grep -oE '<a (id|name)="[A-Za-z0-9_-]+"' "$page" | sed -E 's/.*="(.*)"/\1/'; slugs "$page") |
    sort -u | tr '\n' ' ')"

files() {
    for d in src kernels eval data_tools tests scripts bench configs tokenizer python docs; do
        [ -d "$d" ] && grep -rlI -e '§' -e 'models\.md#' "$d" || true
    done | grep -vE '^(tests/data|docs/notebook/gpu-results)/' || true
    for f in CMakeLists.txt README.md; do [ -f "$f" ] && grep -lI -e '§' -e 'models\.md#' "$f" || true; done
}

bad=0
while read -r f; do
    # named citations: §<name> and models.md#<name> (and in-page links (#<name>) on the page itself)
    while IFS=: read -r line name; do
        [[ $anchors == *" $name "* ]] && continue
        echo "FAIL $f:$line cites $name, which does not exist in $page"
        bad=1
    done < <(
        { grep -noE '§[a-z]([a-z0-9_-]*[a-z0-9])?' "$f" | sed 's/§//'
          grep -noE 'models\.md#[A-Za-z0-9_-]+' "$f" | sed 's/models\.md#//'
          [ "$f" = "$page" ] && grep -noE '\]\(#[A-Za-z0-9_-]+\)' "$f" | sed -E 's/\]\(#(.*)\)/\1/'
        } || true)
    # numbered citations (a paper's sections excepted)
    case "$f" in tests/paper_values/*) continue ;; esac
    while IFS=: read -r line num; do
        echo "FAIL $f:$line cites $num, a section number: cite $page by a section's name"
        bad=1
    done < <(grep -noP "(?<!paper )(?<!paper's )(?<!supplement )(?<!supplement's )§[0-9][0-9a-z.]*" "$f" || true)
done < <(files | sort -u)

[ "$bad" = 0 ] && echo "every citation of $page names one of its sections"
exit "$bad"
