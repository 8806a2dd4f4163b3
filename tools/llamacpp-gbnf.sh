#!/usr/bin/env bash
# Regenerates the golden grammars of grammar/jsonschema's corpus: for each
# testdata/corpus/NAME.json, llama.cpp's own GBNF, written by llama.cpp's
# reference converter (examples/json_schema_to_grammar.py, the algorithm of
# common/json-schema-to-grammar.cpp), as NAME.llamacpp.gbnf; where the
# converter fails, its error as NAME.llamacpp.err instead.
#
# Usage: tools/llamacpp-gbnf.sh [LLAMA_CPP_DIR]
#
# LLAMA_CPP_DIR (default $LLAMA_CPP, else /tmp/llcpp) is a checkout of the
# llama.cpp that node-llama-cpp (package.json) bundles, which ships it as a git
# bundle (npm ci --omit=optional first):
#   git clone node_modules/node-llama-cpp/llama/gitRelease.bundle /tmp/llcpp
# The tests read the files written here; they need neither python3 nor llama.cpp.
set -euo pipefail
llcpp="${1:-${LLAMA_CPP:-/tmp/llcpp}}"
converter="$llcpp/examples/json_schema_to_grammar.py"
[ -f "$converter" ] || { echo "no $converter: pass a llama.cpp checkout" >&2; exit 1; }
corpus="$(cd "$(dirname "$0")/.." && pwd)/grammar/jsonschema/testdata/corpus"
n=0
for schema in "$corpus"/*.json; do
  name="${schema%.json}"
  rm -f "$name.llamacpp.gbnf" "$name.llamacpp.err"
  if out="$(python3 "$converter" "$schema" 2>&1)"; then
    printf '%s\n' "$out" > "$name.llamacpp.gbnf"
  else
    # The last line of a Python traceback is the error.
    printf '%s\n' "$out" | tail -n 1 > "$name.llamacpp.err"
  fi
  n=$((n + 1))
done
echo "$n schemas converted into $corpus"
