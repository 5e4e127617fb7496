# cmake --install: the three tools, the plugin ABI header, the bundled suite and the catalogue it
# is made from (so that the installed moe-golden can verify it), the JSON schemas of the reports
# (spec/*.schema.json), the Python package (tools/python) and a CMake package
# so that a plugin project outside this tree does
#   find_package(moe_conform REQUIRED)
#   add_library(my_moe MODULE my_moe.c)
#   target_link_libraries(my_moe PRIVATE moe_conform::backend_abi)
#   moe_conform_add_suite(NAME my_moe BACKEND_LIBS $<TARGET_FILE:my_moe> SUITE ${MOE_CONFORM_BUNDLED_SUITE})
include(CMakePackageConfigHelpers)
set(MOE_SUITE_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/moe_conform/golden)
# moe-golden finds it from its own folder (tools/moe-golden/CMakeLists.txt); keep the two in step.
set(MOE_CATALOG_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/moe_conform/catalog)
set(MOE_SCHEMA_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/moe_conform/spec)
set(MOE_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/moe_conform)
# Where tools/python/CMakeLists.txt installs the package moe_conform (Debian's layout, on the
# sys.path of /usr/bin/python3 when the prefix is /usr); keep the two in step.
set(MOE_PYTHON_SITE_INSTALL_DIR lib/python3/dist-packages)

install(TARGETS moe-conform moe-golden moe-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/spec/include/moe_conform/backend_abi.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/moe_conform)
install(TARGETS moe_backend_abi EXPORT moe_conformTargets)
install(EXPORT moe_conformTargets NAMESPACE moe_conform:: DESTINATION ${MOE_CMAKE_INSTALL_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/golden/ DESTINATION ${MOE_SUITE_INSTALL_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/conformance/catalog/bundled.json DESTINATION ${MOE_CATALOG_INSTALL_DIR})
file(GLOB moe_schemas ${PROJECT_SOURCE_DIR}/spec/*.schema.json)
install(FILES ${moe_schemas} DESTINATION ${MOE_SCHEMA_INSTALL_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/moe_conformConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/moe_conformConfig.cmake
                              INSTALL_DESTINATION ${MOE_CMAKE_INSTALL_DIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR MOE_SUITE_INSTALL_DIR MOE_SCHEMA_INSTALL_DIR
                                        MOE_PYTHON_SITE_INSTALL_DIR)
# Before 1.0 a minor release may break what a downstream project uses (flags, report fields, the
# plugin ABI's additions): find_package(moe_conform 0.1) must not accept a 0.2 (SameMajorVersion
# did, and accepted this 0.1 for a request of 0.0). From 1.0 on, the major version says it.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(moe_version_compatibility SameMinorVersion)
else()
  set(moe_version_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/moe_conformConfigVersion.cmake
                                 COMPATIBILITY ${moe_version_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/moe_conformConfig.cmake ${PROJECT_BINARY_DIR}/moe_conformConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/MoeConform.cmake
        DESTINATION ${MOE_CMAKE_INSTALL_DIR})
