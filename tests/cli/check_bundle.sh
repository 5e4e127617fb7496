#!/usr/bin/env bash
# scripts/bundle's folder runs on its own: every library the tools load but the C and C++
# runtimes (glibc's libraries, libstdc++, libgcc_s) resolves inside it, the tools run from an
# unrelated folder with a bare environment, and a folder the script did not make is never
# replaced; OUT/measure lists its steps and runs them with their logs and summary.
# Usage: check_bundle.sh SOURCE_DIR BUILD_DIR OUT
set -euo pipefail
root=$1 build=$2 out=$3
rm -rf "$out" "$out.user" "$out.logs" "$out.ab"
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

# OUT/measure: the steps it lists, a step it does not know refused, and three steps run for real on
# whatever OpenCL device is here (PoCL in CI), each with its line in the summary.
steps=$("$out/measure" --dry-run | wc -l)
[[ $steps -eq 13 ]] || { echo "FAIL: measure --dry-run lists $steps steps, not 13"; exit 1; }
if "$out/measure" --only nope "$out.logs" 2> /dev/null; then echo "FAIL: measure ran an unknown step"; exit 1; fi
rm -rf "$out.logs"
"${bare[@]}" "$out/measure" --device "${MOE_BUNDLE_DEVICE:-Portable}" --only list,transfers,kernels,ptx --budget 240 "$out.logs" 2> /dev/null
for s in list transfers kernels ptx; do
  grep -q "^$s *rc 0 " "$out.logs/summary.txt" || { echo "FAIL: measure's $s step:"; cat "$out.logs/summary.txt"; exit 1; }
done
grep -q "staged 8x1024" "$out.logs/07-transfers.log" || { echo "FAIL: the transfers step has no table"; exit 1; }
[[ -s "$out.logs/09-kernels.log" ]] || { echo "FAIL: measure kept no log of the kernels step"; exit 1; }
# ptx-loads on the programs the run dumped: PoCL's are not PTX, and are named as such.
ls "$out.logs/ptx/"main-*.bin > /dev/null || { echo "FAIL: the ptx step dumped no main program"; exit 1; }
grep -q "^main-.*\.bin: not PTX" "$out.logs/13-ptx.log" || { echo "FAIL: the ptx step's log:"; cat "$out.logs/13-ptx.log"; exit 1; }

# Kernels to compare: the files of a folder that differ from the tree's go to OUT/kernels/NAME, a
# folder MOE_OPENCL_KERNEL_DIR takes, and OUT/measure gains its step ab_NAME; bad ones are refused.
k=$(mktemp -d)
trap 'rm -rf "$k"' EXIT
mkdir "$k/mine" "$k/same" "$k/foreign"
kernels="$root/backends/opencl/src/kernels"
cp "$kernels/swiglu.cl" "$kernels/gather.cl" "$k/mine/" && echo "// a change" >> "$k/mine/swiglu.cl"
cp "$kernels/gather.cl" "$k/same/" && echo "// none of ours" > "$k/foreign/mine.cl"
rm -rf "$out.ab"
"$root/scripts/bundle" --from "$build" --kernels "$k/mine" "$out.ab" > /dev/null
[[ -f "$out.ab/kernels/mine/swiglu.cl" && ! -e "$out.ab/kernels/mine/gather.cl" ]] \
  || { echo "FAIL: OUT/kernels/mine is not the changed file alone:"; ls -R "$out.ab/kernels"; exit 1; }
"$out.ab/measure" --dry-run | grep -q "^ab_mine .*env MOE_OPENCL_KERNEL_DIR=$out.ab/kernels/mine moe-bench " \
  || { echo "FAIL: measure has no ab_mine step:"; "$out.ab/measure" --dry-run; exit 1; }
[[ $("$out.ab/measure" --dry-run | wc -l) -eq 14 ]] || { echo "FAIL: measure with one ab step does not list 14 steps"; exit 1; }
r=$(MOE_OPENCL_KERNEL_DIR="$out.ab/kernels/mine" "$out.ab/run" moe-conform run --backend opencl --quiet \
  --case "$out.ab/data/golden/topk_one.h5" 2>&1) || { echo "FAIL: a case with OUT/kernels/mine: $r"; exit 1; }
grep -q "1 passed, 0 failed, 0 skipped" <<< "$r" || { echo "FAIL: a case with OUT/kernels/mine: $r"; exit 1; }
rm -rf "$out.ab"
refused() {  # MESSAGE ARGS...: scripts/bundle exits 2 saying MESSAGE and makes no folder
  local want=$1 msg rc=0
  shift
  msg=$("$root/scripts/bundle" --from "$build" "$@" "$out.ab" 2>&1) || rc=$?
  [[ $rc -eq 2 && $msg == *"$want"* && ! -e "$out.ab" ]] \
    || { echo "FAIL: scripts/bundle $* (exit $rc): $msg"; exit 1; }
}
refused "--kernels $k/none: not a folder" --kernels "$k/none"
refused "mine.cl is no kernel file of backends/opencl/src/kernels" --kernels "$k/foreign"
refused "--kernels $k/same: no .cl file that differs" --kernels "$k/same"
refused "--kernels-from no-such-rev: no such commit" --kernels-from no-such-rev
refused "a second set of kernels named mine" --kernels "$k/mine" --kernels "$k/mine"

mkdir -p "$out.user" && touch "$out.user/keep"
if "$root/scripts/bundle" --from "$build" "$out.user" 2> /dev/null; then
  echo "FAIL: scripts/bundle replaced a folder it did not make"
  exit 1
fi
[[ -f "$out.user/keep" ]] || { echo "FAIL: a user's file was removed"; exit 1; }
echo "bundle OK: $(ls "$out/lib" | wc -l) libraries"
