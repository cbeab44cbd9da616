#!/usr/bin/env bash
# docs/config-keys.md is what `rotor info --keys-markdown` prints from the KEYS table of
# src/config/run_config.c, and it lists the keys `rotor train --help` lists, no more, no fewer.
# Fails with the difference and the command that regenerates the page.
# usage: config_keys_doc.sh ROTOR
set -euo pipefail
rotor=$1
cd "$(dirname "$0")/.."
page=docs/config-keys.md
regen="regenerate it: build/rotor info --keys-markdown > $page"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$rotor" info --keys-markdown > "$tmp/generated.md"
if [ ! -f "$page" ]; then
    echo "FAIL $page does not exist; $regen"
    exit 1
fi
if ! diff -u "$page" "$tmp/generated.md" > "$tmp/diff"; then
    head -n 60 "$tmp/diff"
    echo "FAIL $page differs from \`rotor info --keys-markdown\` (the KEYS table); $regen"
    fail=1
fi

# the key names of the page and of `rotor train --help`, each sorted
grep -oE '^\| `[a-z]+\.[a-z0-9_]+`' "$page" | sed -E 's/^\| `(.*)`/\1/' | sort > "$tmp/page.keys"
"$rotor" train --help | grep -oE '^  [a-z]+\.[a-z0-9_]+ ' | tr -d ' ' | sort > "$tmp/help.keys"
if [ ! -s "$tmp/help.keys" ]; then
    echo "FAIL \`rotor train --help\` lists no keys"
    fail=1
elif ! diff "$tmp/help.keys" "$tmp/page.keys" > "$tmp/keys.diff"; then
    sed -n 's/^< /  only in rotor train --help: /p; s/^> /  only in the page: /p' "$tmp/keys.diff"
    echo "FAIL $page and \`rotor train --help\` list different keys; $regen"
    fail=1
fi
[ "$fail" = 0 ] && echo "$page matches the KEYS table ($(wc -l < "$tmp/help.keys") keys)"
exit "$fail"
