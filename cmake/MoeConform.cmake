# moe_conform_add_suite: registers a conformance run as a CTest test, so a project gates its CI
# with `ctest`. Include this file (or copy it) and point MOE_CONFORM_EXECUTABLE at moe-conform.
#
#   moe_conform_add_suite(NAME <test name> [BACKENDS <name>...] [BACKEND_LIBS <plugin.so>...]
#                         (SUITE <dir> | CASES <file>...)
#                         [FILTER <glob>...] [TIER quick|ci|full] [EXPECT <file>]
#                         [JSON <file>] [JUNIT <file>] [SHARDS <n>]
#                         [CASE_TIMEOUT <seconds>] [TIMEOUT <seconds>])
#
# CASE_TIMEOUT passes --case-timeout: a case (one backend on one file) running longer is killed
# and reported as an ERROR (moe-conform's default: 600 s). TIMEOUT is CTest's limit for the whole
# test: a backend that hangs on every case would otherwise hold CTest for cases x CASE_TIMEOUT.
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
# The test passes on exit 0, fails on 1 (a FAIL, ERROR or XPASS) and 2 (bad input), and is
# reported as skipped ("Not Run") on 77, when every case was skipped (no device, unsupported).
if(NOT DEFINED MOE_CONFORM_EXECUTABLE)
  if(TARGET moe-conform)
    set(MOE_CONFORM_EXECUTABLE $<TARGET_FILE:moe-conform>)
  else()
    find_program(MOE_CONFORM_EXECUTABLE moe-conform REQUIRED)
  endif()
endif()

function(moe_conform_add_suite)
  cmake_parse_arguments(ARG "" "NAME;SUITE;TIER;EXPECT;JSON;JUNIT;SHARDS;CASE_TIMEOUT;TIMEOUT"
                        "BACKENDS;BACKEND_LIBS;CASES;FILTER" ${ARGN})
  if(NOT ARG_NAME OR (NOT ARG_BACKENDS AND NOT ARG_BACKEND_LIBS))
    message(FATAL_ERROR "moe_conform_add_suite: NAME and BACKENDS or BACKEND_LIBS are required")
  endif()
  if(NOT ARG_SUITE AND NOT ARG_CASES)
    message(FATAL_ERROR "moe_conform_add_suite(${ARG_NAME}): give SUITE <dir> or CASES <file>...")
  endif()
  set(cmd ${MOE_CONFORM_EXECUTABLE} run --quiet)
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
