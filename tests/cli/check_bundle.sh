#!/usr/bin/env bash
# scripts/bundle's folder runs on its own: every library the tools load but the C and C++
# runtimes (glibc's libraries, libstdc++, libgcc_s) resolves inside it, the tools run from an
# unrelated folder with a bare environment, and a folder the script did not make is never
# replaced.
# Usage: check_bundle.sh SOURCE_DIR BUILD_DIR OUT
set -euo pipefail
root=$1 build=$2 out=$3
rm -rf "$out" "$out.user"
"$root/scripts/bundle" --from "$build" "$out"

bare=(env -i PATH=/usr/bin:/bin)
outside=$("${bare[@]}" "$out/run" sh -c 'for b in "$0"/bin/*; do ldd "$b"; done' "$out" \
  | awk '$2 == "=>"' | grep -v -F "=> $out/lib/" | grep -v -E '=> /[^ ]*/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libresolv|libutil)\.so' || true)
if [[ -n "$outside" ]]; then
  echo "FAIL: resolved outside the bundle:"
  echo "$outside"
  exit 1
fi

cd "$(mktemp -d)"
"${bare[@]}" "$out/run" moe-conform run --backend reference,cpu --suite "$out/data/golden" --filter '*u4*' --quiet

mkdir -p "$out.user" && touch "$out.user/keep"
if "$root/scripts/bundle" --from "$build" "$out.user" 2> /dev/null; then
  echo "FAIL: scripts/bundle replaced a folder it did not make"
  exit 1
fi
[[ -f "$out.user/keep" ]] || { echo "FAIL: a user's file was removed"; exit 1; }
echo "bundle OK: $(ls "$out/lib" | wc -l) libraries"
