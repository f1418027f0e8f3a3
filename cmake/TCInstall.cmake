# Installs headers, libraries and a ConcurrentTasksConfig.cmake exporting TC::kernel, TC::sync,
# TC::strands and TC::sdk, so find_package(ConcurrentTasks) works against an install tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ConcurrentTasks)
# Build-only helpers are part of the export set as link-only dependencies of the static
# libraries; they carry no usage requirements for consumers.
install(TARGETS tc_kernel tc_sync tc_strands tc_sdk tc_build_options tc_concurrentqueue
        EXPORT ConcurrentTasksTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer kernel sync strands sdk)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${layer}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
install(EXPORT ConcurrentTasksTargets NAMESPACE TC:: DESTINATION ${TC_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ConcurrentTasksConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ConcurrentTasksConfig.cmake INSTALL_DESTINATION ${TC_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ConcurrentTasksConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ConcurrentTasksConfig.cmake
              ${PROJECT_BINARY_DIR}/ConcurrentTasksConfigVersion.cmake
        DESTINATION ${TC_INSTALL_CMAKEDIR})
