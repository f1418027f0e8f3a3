# Installs headers, libraries, a CMake package and a pkg-config file. A build installs one
# flavour, named by its checked mode: `checked` (TC_CHECKED=1) or `unchecked`. Installing a Debug
# build and a Release build into one prefix gives both; ConcurrentTasksConfig.cmake then defines
# TC::kernel, TC::sync, TC::strands and TC::sdk over them (checked in Debug, see the README's
# "Using it"), and TC::checked::<layer> / TC::unchecked::<layer> name a flavour outright.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(TC_CHECKED_DEFINE)
  set(TC_FLAVOUR checked)
else()
  set(TC_FLAVOUR unchecked)
endif()
set(TC_LAYERS kernel sync strands sdk)
set(TC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ConcurrentTasks)

# The two flavours share a prefix, so their files must not: a checked library is
# libtc_<layer>-checked. A shared library carries the project version as its SONAME.
foreach(layer ${TC_LAYERS})
  if(TC_FLAVOUR STREQUAL "checked")
    set_target_properties(tc_${layer} PROPERTIES OUTPUT_NAME tc_${layer}-checked)
  endif()
  set_target_properties(tc_${layer} PROPERTIES VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
endforeach()

# tc_build_options is a link-only dependency of the static libraries (it carries no usage
# requirements for consumers), so it is part of the export set.
install(TARGETS tc_kernel tc_sync tc_strands tc_sdk tc_build_options tc_stack_clash_protection
        EXPORT ConcurrentTasks-${TC_FLAVOUR}-Targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer ${TC_LAYERS})
  if(EXISTS ${PROJECT_SOURCE_DIR}/${layer}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
install(EXPORT ConcurrentTasks-${TC_FLAVOUR}-Targets NAMESPACE TC::${TC_FLAVOUR}::
        DESTINATION ${TC_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ConcurrentTasksConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ConcurrentTasksConfig.cmake INSTALL_DESTINATION ${TC_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ConcurrentTasksConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ConcurrentTasksConfig.cmake
              ${PROJECT_BINARY_DIR}/ConcurrentTasksConfigVersion.cmake
        DESTINATION ${TC_INSTALL_CMAKEDIR})

# pkg-config: ConcurrentTasks.pc (unchecked) or ConcurrentTasks-checked.pc, relocatable (paths
# relative to the file). A sanitizer build names its flags: the whole program must use them.
set(TC_PC_NAME ConcurrentTasks)
set(TC_PC_LIB_SUFFIX "")
if(TC_FLAVOUR STREQUAL "checked")
  set(TC_PC_NAME ConcurrentTasks-checked)
  set(TC_PC_LIB_SUFFIX -checked)
endif()
set(TC_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${TC_PC_DIR}")
  set(TC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  string(REGEX REPLACE "[^/]+" ".." TC_PC_UP "${TC_PC_DIR}")
  set(TC_PC_PREFIX "\${pcfiledir}/${TC_PC_UP}")
endif()
string(JOIN " " TC_PC_SANITIZER_FLAGS ${TC_SANITIZER_FLAGS})
configure_file(${PROJECT_SOURCE_DIR}/cmake/ConcurrentTasks.pc.in
  ${PROJECT_BINARY_DIR}/${TC_PC_NAME}.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/${TC_PC_NAME}.pc DESTINATION ${TC_PC_DIR})
