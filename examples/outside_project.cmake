# cmake -P script: what a plugin author outside this repository does, run by CTest.
#   1. cmake --install the built tree into a fresh prefix (the Python package imports from it);
#   2. configure examples/plugin as a standalone project with CMAKE_PREFIX_PATH=<prefix>;
#   3. build it and run its tests (the bundled suite on the plugin, the broken variant caught).
foreach(v SOURCE_DIR BUILD_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "outside_project.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# The Python package is installed with the tools and imports from the prefix.
file(GLOB site_dirs ${prefix}/lib*/python3/dist-packages)
step(${CMAKE_COMMAND} -E env PYTHONPATH=${site_dirs} /usr/bin/python3 -c
     "import moe_conform; c = moe_conform.load_case('${prefix}/share/moe_conform/golden/gemm3_qwen_spec_f32.h5'); assert moe_conform.check(c, c.reference).status == 'PASS'")
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/plugin -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR}/build --output-on-failure --no-tests=error)
