# moe_conform_add_suite: registers a conformance run as a CTest test, so a project gates its CI
# with `ctest`. Include this file (or copy it) and point MOE_CONFORM_EXECUTABLE at moe-conform.
#
#   moe_conform_add_suite(NAME <test name> [BACKENDS <name>...] [BACKEND_LIBS <plugin.so>...]
#                         (SUITE <dir> | CASES <file>...)
#                         [FILTER <glob>...] [TIER quick|ci|full] [EXPECT <file>]
#                         [JSON <file>] [JUNIT <file>] [SHARDS <n>]
#                         [CASE_TIMEOUT <seconds>] [TIMEOUT <seconds>] [FAIL_ON_MISTRUSTED])
#
# CASE_TIMEOUT passes --case-timeout: a case (one backend on one file) running longer is killed
# and reported as an ERROR (moe-conform's default: 600 s). TIMEOUT is CTest's limit for the whole
# test: a backend that hangs on every case would otherwise hold CTest for cases x CASE_TIMEOUT.
#
# FAIL_ON_MISTRUSTED passes --fail-on-mistrusted: a MISTRUSTED result (a pass whose bound cannot
# tell a right answer from a wrong one) fails the test, as a FAIL does; without it, it passes.
#
# SHARDS n registers n tests, <name>_1of<n> ... <name>_<n>of<n>, each running one share of the
# cases FILTER and TIER select (moe-conform run --shard i/n; a share left with none is "Not Run"),
# so that `ctest -j` or CI runners spread the suite;
# JSON and JUNIT files then get the shard in their name (r.json -> r_1of4.json).
#
# BACKEND_LIBS loads plugins (moe_conform/backend_abi.h; a generator expression such as
# $<TARGET_FILE:my_plugin> is fine); without BACKENDS the run covers every plugin loaded, and
# BACKENDS, if given, must name each of them too (or be `all`): moe-conform refuses a plugin left out.
#
# Relative paths follow CMake's custom: SUITE, CASES and EXPECT (inputs) are taken from the
# calling CMakeLists.txt's source folder, JSON and JUNIT (outputs) from its binary folder, whose
# missing folders are made when the function is called (moe-conform refuses a report whose folder
# does not exist).
#
# The test passes on exit 0, fails on 1 (a FAIL, ERROR or XPASS; a MISTRUSTED with
# FAIL_ON_MISTRUSTED) and 2 (bad input), and is
# reported as skipped ("Not Run") on 77, when every case was skipped (no device, unsupported).
if(NOT DEFINED MOE_CONFORM_EXECUTABLE)
  if(TARGET moe-conform)
    set(MOE_CONFORM_EXECUTABLE $<TARGET_FILE:moe-conform>)
  else()
    find_program(MOE_CONFORM_EXECUTABLE moe-conform REQUIRED)
  endif()
endif()
# Kept for callers in folders where the variable is not visible (find_package in a sibling folder).
set_property(GLOBAL PROPERTY MOE_CONFORM_EXECUTABLE_AT_INCLUDE "${MOE_CONFORM_EXECUTABLE}")

# <out> = <path> made absolute against <base>; a generator expression is left as it is.
function(_moe_conform_absolute out path base)
  if(path MATCHES "^\\$<" OR IS_ABSOLUTE "${path}")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    get_filename_component(abs "${path}" ABSOLUTE BASE_DIR "${base}")
    set(${out} "${abs}" PARENT_SCOPE)
  endif()
endfunction()

function(moe_conform_add_suite)
  cmake_parse_arguments(ARG "FAIL_ON_MISTRUSTED" "NAME;SUITE;TIER;EXPECT;JSON;JUNIT;SHARDS;CASE_TIMEOUT;TIMEOUT"
                        "BACKENDS;BACKEND_LIBS;CASES;FILTER" ${ARGN})
  if(NOT ARG_NAME OR (NOT ARG_BACKENDS AND NOT ARG_BACKEND_LIBS))
    message(FATAL_ERROR "moe_conform_add_suite: NAME and BACKENDS or BACKEND_LIBS are required")
  endif()
  if(NOT ARG_SUITE AND NOT ARG_CASES)
    message(FATAL_ERROR "moe_conform_add_suite(${ARG_NAME}): give SUITE <dir> or CASES <file>...")
  endif()
  set(exe "${MOE_CONFORM_EXECUTABLE}")
  if(NOT exe)
    get_property(exe GLOBAL PROPERTY MOE_CONFORM_EXECUTABLE_AT_INCLUDE)
  endif()
  if(NOT exe)
    message(FATAL_ERROR "moe_conform_add_suite(${ARG_NAME}): MOE_CONFORM_EXECUTABLE is not set "
                        "(find_package(moe_conform) or set it to the moe-conform to run)")
  endif()
  if(DEFINED ARG_SHARDS AND NOT ARG_SHARDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "moe_conform_add_suite(${ARG_NAME}): SHARDS must be a positive integer, not '${ARG_SHARDS}'")
  endif()
  foreach(opt SUITE EXPECT)
    if(ARG_${opt})
      _moe_conform_absolute(ARG_${opt} "${ARG_${opt}}" "${CMAKE_CURRENT_SOURCE_DIR}")
    endif()
  endforeach()
  set(cases)
  foreach(c IN LISTS ARG_CASES)
    _moe_conform_absolute(c "${c}" "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND cases "${c}")
  endforeach()
  set(ARG_CASES ${cases})
  foreach(opt JSON JUNIT)
    if(ARG_${opt})
      _moe_conform_absolute(ARG_${opt} "${ARG_${opt}}" "${CMAKE_CURRENT_BINARY_DIR}")
      if(NOT ARG_${opt} MATCHES "\\$<")
        get_filename_component(dir "${ARG_${opt}}" DIRECTORY)
        file(MAKE_DIRECTORY "${dir}")
      endif()
    endif()
  endforeach()
  set(cmd ${exe} run --quiet)
  if(ARG_BACKENDS)
    list(JOIN ARG_BACKENDS "," backends)
    list(APPEND cmd --backend ${backends})
  endif()
  foreach(lib IN LISTS ARG_BACKEND_LIBS)
    list(APPEND cmd --backend-lib ${lib})
  endforeach()
  if(ARG_SUITE)
    list(APPEND cmd --suite ${ARG_SUITE})
  endif()
  foreach(c IN LISTS ARG_CASES)
    list(APPEND cmd --case ${c})
  endforeach()
  foreach(f IN LISTS ARG_FILTER)
    list(APPEND cmd --filter ${f})
  endforeach()
  foreach(opt TIER EXPECT CASE_TIMEOUT)
    if(ARG_${opt})
      string(TOLOWER ${opt} flag)
      string(REPLACE "_" "-" flag ${flag})
      list(APPEND cmd --${flag} ${ARG_${opt}})
    endif()
  endforeach()
  if(ARG_FAIL_ON_MISTRUSTED)
    list(APPEND cmd --fail-on-mistrusted)
  endif()
  set(properties SKIP_RETURN_CODE 77)
  if(ARG_TIMEOUT)
    list(APPEND properties TIMEOUT ${ARG_TIMEOUT})
  endif()
  if(NOT ARG_SHARDS OR ARG_SHARDS LESS_EQUAL 1)
    foreach(opt JSON JUNIT)
      if(ARG_${opt})
        string(TOLOWER ${opt} flag)
        list(APPEND cmd --${flag} ${ARG_${opt}})
      endif()
    endforeach()
    add_test(NAME ${ARG_NAME} COMMAND ${cmd})
    set_tests_properties(${ARG_NAME} PROPERTIES ${properties})
    return()
  endif()
  foreach(i RANGE 1 ${ARG_SHARDS})
    set(shard_cmd ${cmd} --shard ${i}/${ARG_SHARDS})
    foreach(opt JSON JUNIT)
      if(ARG_${opt})
        string(TOLOWER ${opt} flag)
        get_filename_component(dir ${ARG_${opt}} DIRECTORY)
        get_filename_component(stem ${ARG_${opt}} NAME_WLE)
        get_filename_component(ext ${ARG_${opt}} LAST_EXT)
        list(APPEND shard_cmd --${flag} ${dir}/${stem}_${i}of${ARG_SHARDS}${ext})
      endif()
    endforeach()
    add_test(NAME ${ARG_NAME}_${i}of${ARG_SHARDS} COMMAND ${shard_cmd})
    set_tests_properties(${ARG_NAME}_${i}of${ARG_SHARDS} PROPERTIES ${properties})
  endforeach()
endfunction()
