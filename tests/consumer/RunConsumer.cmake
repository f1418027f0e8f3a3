# Builds and runs the consumer project one way, as `cmake -P` from a ctest test:
#   -DMODE=find_package|add_subdirectory|fetchcontent -DSOURCE_DIR=<ConcurrentTasks tree>
#   -DWORK_DIR=<scratch> -DGENERATOR=... -DCXX=... -DC=... -DBUILD_TYPE=... -DSANITIZER=...
#   -DCHECKED=...
# find_package first builds the library alone (no tests, samples or benchmarks) and installs it
# into WORK_DIR/prefix. The outer build's compiler, build type, sanitizer and checked mode pass
# through, so no program mixes instrumented and plain objects.
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

set(common -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  -DTC_SANITIZER=${SANITIZER})
if(C)
  list(APPEND common -DCMAKE_C_COMPILER=${C})
endif()
set(library_options -DTC_BUILD_TESTS=OFF -DTC_BUILD_SAMPLES=OFF -DTC_BUILD_BENCHMARKS=OFF
  -DTC_CHECKED=${CHECKED})

file(REMOVE_RECURSE ${WORK_DIR})
set(consumer_args)
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/library ${common} ${library_options}
      -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/library)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/library)
  # The installed layout: headers of every layer, the four libraries, the package files.
  foreach(file include/TC/Core.h include/TC/Synchronization.h include/TC/Strands.h
          include/TC/TC.h include/TC/Testing.h include/TC/Testing/Context.h)
    if(NOT EXISTS ${WORK_DIR}/prefix/${file})
      message(FATAL_ERROR "not installed: ${file}")
    endif()
  endforeach()
  file(GLOB_RECURSE config ${WORK_DIR}/prefix/*/ConcurrentTasksConfig.cmake)
  file(GLOB_RECURSE libraries ${WORK_DIR}/prefix/*/libtc_*.a ${WORK_DIR}/prefix/*/libtc_*.so)
  list(LENGTH libraries count)
  if(NOT config OR count LESS 4)
    message(FATAL_ERROR "installed package incomplete: '${config}', '${libraries}'")
  endif()
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
else()
  # The library's options, seen by its CMakeLists through the consumer's cache.
  list(APPEND consumer_args -DTC_SOURCE_DIR=${SOURCE_DIR} ${library_options})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/project -B ${WORK_DIR}/consumer ${common}
    -DTC_CONSUMER_MODE=${MODE} ${consumer_args})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
