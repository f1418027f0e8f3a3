# moodycamel::ConcurrentQueue (Debian: libconcurrentqueue-dev). Used only inside .cpp files and
# private headers: it never appears in a public header.
find_path(TC_CONCURRENTQUEUE_INCLUDE_DIR concurrentqueue.h PATH_SUFFIXES concurrentqueue)
if(NOT TC_CONCURRENTQUEUE_INCLUDE_DIR)
  message(FATAL_ERROR "moodycamel ConcurrentQueue not found: apt-get install libconcurrentqueue-dev")
endif()
add_library(tc_concurrentqueue INTERFACE)
target_include_directories(tc_concurrentqueue SYSTEM INTERFACE ${TC_CONCURRENTQUEUE_INCLUDE_DIR})
