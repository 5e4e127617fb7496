#!/usr/bin/env bash
# A downstream project's view of an installed moe-conform (docs/moe-conform.md, "In your own CMake
# project"): cmake --install into a prefix that is then moved elsewhere; the files it must hold, none
# of its text files naming the source or build tree; /usr/bin/python3 imports moe_conform from
# MOE_CONFORM_PYTHONPATH; the installed moe-golden verifies an installed file with the installed
# catalogue, found beside it; a project (no compiler) that does find_package(moe_conform X.Y) and
# registers moe_conform_add_suite tests with relative EXPECT, JSON and JUNIT paths and SHARDS, whose
# CTest verdicts are checked: XFAILs pass, a FAIL fails, an empty shard is "Not Run" (exit 77), and
# the per-shard reports land in a folder that did not exist; and, before 1.0, a request for an
# earlier minor version is refused.
# Usage: check_downstream.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$work/staged" > /dev/null
mv "$work/staged" "$work/prefix"  # a relocated prefix: nothing may point back into the staging one
prefix=$work/prefix
for f in bin/moe-conform bin/moe-golden bin/moe-bench include/moe_conform/backend_abi.h \
         share/moe_conform/golden/MANIFEST.sha256 share/moe_conform/catalog/bundled.json \
         share/moe_conform/spec/report.schema.json \
         lib/python3/dist-packages/moe_conform/__init__.py lib/cmake/moe_conform/moe_conformConfig.cmake; do
  [[ -f $prefix/$f ]] || fail "the prefix has no $f"
done
n_src=$(find "$src/data/golden" -name '*.h5' | wc -l)
n_inst=$(find "$prefix/share/moe_conform/golden" -name '*.h5' | wc -l)
[[ $n_src -eq $n_inst ]] || fail "$n_inst golden files installed, $n_src in data/golden"
if leaks=$(grep -rIl -e "$src" -e "$build" -e "$work/staged" "$prefix"); then
  fail "installed text files name the source, build or staging tree: $leaks"
fi
# selftest's default suite is the prefix's own, wherever the prefix is: with a file of the installed
# copy removed, its manifest check fails naming the prefix (the source tree's suite would pass).
rm "$prefix/share/moe_conform/golden/topk_one.h5"
if out=$("$prefix/bin/moe-conform" selftest --family reference --shard 1000/1000 2>&1); then
  fail "selftest's default suite: exit 0 with a file missing from the installed suite"
fi
grep -q "golden files of $prefix/share/moe_conform/golden do not match" <<< "$out" \
  || fail "selftest's default suite is not the prefix's: $out"
cp "$src/data/golden/topk_one.h5" "$prefix/share/moe_conform/golden/"
# The installed moe-golden verifies an installed file without --catalog: with the prefix's catalogue
# (named in its summary), not the source tree's. Then, that catalogue changed, it says so.
catalog=$prefix/share/moe_conform/catalog/bundled.json
out=$("$prefix/bin/moe-golden" verify --dir "$prefix/share/moe_conform/golden" --filter topk_one 2>&1) \
  || fail "the installed moe-golden cannot verify an installed file: $out"
grep -q "^verify: 1 case(s) of $catalog regenerated, [0-9]* manifest entries; all identical$" <<< "$out" \
  || fail "installed moe-golden verify: not the prefix's catalogue, or not one case: $out"
cp "$catalog" "$work/bundled.json"
echo '{"format": "moe-catalog"}' > "$catalog"
if out=$("$prefix/bin/moe-golden" verify --dir "$prefix/share/moe_conform/golden" --filter topk_one 2>&1); then
  fail "installed moe-golden verify: exit 0 with the prefix's catalogue replaced"
fi
grep -q "$catalog" <<< "$out" || fail "installed moe-golden verify does not read the prefix's catalogue: $out"
cp "$work/bundled.json" "$catalog"

# The installed version as X.Y: the project below asks for it. Before 1.0 a minor release may
# break a project: X.(Y-1) is refused (SameMajorVersion accepted a request for 0.0 from 0.1.0).
version=$(sed -nE 's/^set\(PACKAGE_VERSION "([0-9]+\.[0-9]+)[."].*/\1/p' "$prefix/lib/cmake/moe_conform/moe_conformConfigVersion.cmake")
[[ $version =~ ^[0-9]+\.[0-9]+$ ]] || fail "no version in the installed moe_conformConfigVersion.cmake"
major=${version%.*} minor=${version#*.}
if (( major == 0 && minor > 0 )); then
  older=$major.$((minor - 1))
  mkdir -p "$work/older"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(older NONE)\nfind_package(moe_conform %s REQUIRED)\n' \
    "$older" > "$work/older/CMakeLists.txt"
  if cmake -S "$work/older" -B "$work/older-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/older.log" 2>&1; then
    fail "find_package(moe_conform $older) accepted the installed $version"
  fi
  grep -q "compatible with requested version \"$older\"" "$work/older.log" \
    || { cat "$work/older.log"; fail "find_package(moe_conform $older) failed, but not for its version"; }
fi

proj=$work/project
mkdir -p "$proj"
one_case=gemm3_qwen_spec_f32.h5
cat > "$proj/known.json" << 'EOF'
{"format": "moe-expectations", "format_version": 1, "expectations": [
  {"backend": "*", "case": "gemm2_nobias_*", "status": "SKIP", "reason": "no bias_1 to drop"},
  {"backend": "*", "case": "gemm2_*", "status": "FAIL", "reason": "bias_1 dropped on purpose"}]}
EOF
cat > "$proj/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION 3.25)
project(downstream NONE)
enable_testing()
find_package(moe_conform $version REQUIRED)
moe_conform_add_suite(NAME known BACKENDS mutant:bias1_dropped SUITE \${MOE_CONFORM_BUNDLED_SUITE}
                      FILTER "gemm2_*" EXPECT known.json SHARDS 2 JSON reports/known.json JUNIT reports/known.xml)
moe_conform_add_suite(NAME caught BACKENDS mutant:bias1_dropped SUITE \${MOE_CONFORM_BUNDLED_SUITE} FILTER "gemm2_*")
moe_conform_add_suite(NAME one BACKENDS loop_f32 CASES \${MOE_CONFORM_BUNDLED_SUITE}/$one_case SHARDS 2)
add_test(NAME python COMMAND /usr/bin/python3 -c
         "import moe_conform; c = moe_conform.load_case('\${MOE_CONFORM_BUNDLED_SUITE}/$one_case'); print(c.name)")
set_tests_properties(python PROPERTIES ENVIRONMENT PYTHONPATH=\${MOE_CONFORM_PYTHONPATH})
EOF
cmake -S "$proj" -B "$work/project-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; fail "find_package(moe_conform) from the prefix"; }
ctest --test-dir "$work/project-build" -j2 > "$work/ctest.log" 2>&1 && fail "ctest passed though 'caught' must fail"
verdict() { grep -E "Test +#[0-9]+: $1 \.+" "$work/ctest.log" | sed -E 's/.*\.+ *(\*\*\*)?([A-Za-z]+).*/\2/'; }
declare -A want=([known_1of2]=Passed [known_2of2]=Passed [caught]=Failed [one_1of2]=Passed [one_2of2]=Skipped
                 [python]=Passed)
for t in "${!want[@]}"; do
  got=$(verdict "$t")
  [[ $got == "${want[$t]}" ]] || { cat "$work/ctest.log"; fail "test $t: '$got', expected ${want[$t]}"; }
done
for r in known_1of2.json known_2of2.json known_1of2.xml known_2of2.xml; do
  [[ -s $work/project-build/reports/$r ]] || fail "no report $r"
done
echo "ok: installed, relocated, found, and each test's CTest verdict as expected"
