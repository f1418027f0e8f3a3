# Builds and runs the consumer project one way, as `cmake -P` from a ctest test:
#   -DMODE=package|sanitizer|add_subdirectory|fetchcontent -DSOURCE_DIR=<ConcurrentTasks tree>
#   -DWORK_DIR=<scratch> -DGENERATOR=... -DCXX=... -DC=... [-DSHARED=ON] [-DSANITIZER=...]
#   [-DBUILD_TYPE=...] [-DCHECKED=...]
# package: builds the library alone (no tests, samples or benchmarks) in Release and in Debug,
#   installs both into one prefix (the unchecked and the checked flavour), then builds the
#   consumer with find_package in Debug (it must link the checked flavour: a misuse aborts with the
#   checked-mode message) and in Release (unchecked), and once with nothing but
#   `pkg-config --cflags --libs`. SHARED=ON does it all with shared libraries, and checks that
#   they export the public API only.
# sanitizer: the same with SANITIZER (address or thread) in BUILD_TYPE, one flavour: the consumer
#   compiles with -Werror and runs with no suppressions file.
# add_subdirectory, fetchcontent: the consumer builds the library from the source tree, with the
#   outer build's compiler, build type, sanitizer and checked mode.
foreach(var MODE SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RunConsumer.cmake: ${var} is not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " line "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${line}")
  endif()
endfunction()

# Runs a consumer program; it must succeed and say it ran in the expected flavour.
function(run_consumer program flavour)
  execute_process(COMMAND ${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${program}: ${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer \\(${flavour}\\): OK" OR err MATCHES "Sanitizer|runtime error")
    message(FATAL_ERROR "${program} failed (${rc}), expected the ${flavour} flavour: ${out}${err}")
  endif()
endfunction()

# The death test: a checked consumer must abort on a misuse, naming the rule.
function(run_misuse program)
  execute_process(COMMAND ${program} --misuse RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "TC checked mode: ResumeTask on a null handle")
    message(FATAL_ERROR "${program} --misuse did not abort with the checked-mode message (${rc}): ${out}${err}")
  endif()
  message(STATUS "${program} --misuse: aborted (${rc}): ${err}")
endfunction()

set(common -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DTC_SANITIZER=${SANITIZER})
set(library_options -DTC_BUILD_TESTS=OFF -DTC_BUILD_SAMPLES=OFF -DTC_BUILD_BENCHMARKS=OFF)
if(C)
  list(APPEND library_options -DCMAKE_C_COMPILER=${C}) # the consumer project is C++ only
endif()
set(project ${SOURCE_DIR}/tests/consumer/project)
# The sanitizers report to stderr, which run_consumer reads; no suppressions file is named.
set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=1")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
set(ENV{TSAN_OPTIONS} "halt_on_error=1:second_deadlock_stack=1")

# Builds and installs the library in `config` (its flavour follows: checked in Debug).
function(install_library config)
  set(build ${WORK_DIR}/library-${config})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} ${common} ${library_options}
      -DCMAKE_BUILD_TYPE=${config} -DBUILD_SHARED_LIBS=${SHARED} -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --build ${build})
  run(${CMAKE_COMMAND} --install ${build})
endfunction()

# Configures and builds the consumer with find_package in `config`; returns the program's path.
function(build_consumer config out)
  set(build ${WORK_DIR}/consumer-${config})
  run(${CMAKE_COMMAND} -S ${project} -B ${build} ${common} -DCMAKE_BUILD_TYPE=${config}
      -DTC_CONSUMER_MODE=find_package -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --build ${build})
  set(${out} ${build}/consumer PARENT_SCOPE)
endfunction()

# Builds the consumer with the compiler and `pkg-config --cflags --libs` alone.
function(build_with_pkg_config module out)
  find_program(PKG_CONFIG NAMES pkg-config pkgconf REQUIRED)
  file(GLOB_RECURSE pc ${WORK_DIR}/prefix/*/${module}.pc)
  if(NOT pc)
    message(FATAL_ERROR "not installed: ${module}.pc")
  endif()
  get_filename_component(pc_dir "${pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${module} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs ${module} failed (${rc})")
  endif()
  message(STATUS "pkg-config --cflags --libs ${module}: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(program ${WORK_DIR}/pkg-config-${module})
  set(rpath)
  if(SHARED)
    get_filename_component(lib_dir "${pc_dir}" DIRECTORY)
    set(rpath -Wl,-rpath,${lib_dir})
  endif()
  run(${CXX} -std=c++20 -O1 -Wall -Wextra -Werror ${project}/main.cpp -o ${program} ${flags} ${rpath})
  set(${out} ${program} PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
if(MODE STREQUAL "package")
  if(NOT SHARED)
    set(SHARED OFF)
  endif()
  install_library(Release)
  install_library(Debug)
  # The installed layout: headers of every layer, both flavours of the four libraries, the
  # package and pkg-config files.
  foreach(file include/TC/Core.h include/TC/Synchronization.h include/TC/Strands.h
          include/TC/TC.h include/TC/Testing.h include/TC/Testing/Context.h include/TC/detail/Fence.h)
    if(NOT EXISTS ${WORK_DIR}/prefix/${file})
      message(FATAL_ERROR "not installed: ${file}")
    endif()
  endforeach()
  if(SHARED)
    set(ext so)
  else()
    set(ext a)
  endif()
  foreach(layer kernel sync strands sdk)
    foreach(name tc_${layer} tc_${layer}-checked)
      file(GLOB_RECURSE found ${WORK_DIR}/prefix/*/lib${name}.${ext})
      if(NOT found)
        message(FATAL_ERROR "not installed: lib${name}.${ext}")
      endif()
    endforeach()
  endforeach()
  if(SHARED)
    # Only the public API is exported: the scheduler's class is, its private core is not.
    file(GLOB_RECURSE kernel_so ${WORK_DIR}/prefix/*/libtc_kernel.so)
    execute_process(COMMAND nm -DC --defined-only ${kernel_so} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR NOT symbols MATCHES "TC::Scheduler::" OR symbols MATCHES "SchedulerCore")
      message(FATAL_ERROR "libtc_kernel.so exports the wrong symbols (${rc}):\n${symbols}")
    endif()
  endif()

  build_consumer(Debug debug_program)
  run_consumer(${debug_program} checked)
  run_misuse(${debug_program})
  build_consumer(Release release_program)
  run_consumer(${release_program} unchecked)
  build_with_pkg_config(ConcurrentTasks pc_program)
  run_consumer(${pc_program} unchecked)
elseif(MODE STREQUAL "sanitizer")
  set(SHARED OFF)
  install_library(${BUILD_TYPE})
  build_consumer(${BUILD_TYPE} program)
  file(GLOB checked_targets ${WORK_DIR}/prefix/*/cmake/ConcurrentTasks/ConcurrentTasks-checked-Targets.cmake)
  if(checked_targets)
    run_consumer(${program} checked)
    run_misuse(${program})
  else()
    run_consumer(${program} unchecked)
  endif()
else()
  # The library's options, seen by its CMakeLists through the consumer's cache.
  run(${CMAKE_COMMAND} -S ${project} -B ${WORK_DIR}/consumer ${common} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
      -DTC_CONSUMER_MODE=${MODE} -DTC_SOURCE_DIR=${SOURCE_DIR} ${library_options} -DTC_CHECKED=${CHECKED})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
  run(${WORK_DIR}/consumer/consumer)
endif()
