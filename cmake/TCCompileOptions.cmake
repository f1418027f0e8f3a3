# Warning set, sanitizers and checked mode, applied through one interface target that every
# TC target and test links privately, so consumers of the package inherit none of it.
# -Wnon-virtual-dtor is left out on purpose: the guide's primitives derive privately
# from ISuspendCallback, whose destructor is protected and non-virtual by design (a callback is
# never deleted through it), and that code must compile verbatim.
add_library(tc_build_options INTERFACE)
target_compile_options(tc_build_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2
  $<$<COMPILE_LANGUAGE:CXX>:-Wno-gnu-zero-variadic-macro-arguments>
  $<$<CXX_COMPILER_ID:GNU>:-Wno-interference-size>)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(tc_build_options INTERFACE -Wno-unknown-warning-option)
endif()
if(TC_WARNINGS_AS_ERRORS)
  target_compile_options(tc_build_options INTERFACE -Werror)
endif()

# Stack clash protection: a function whose frame is larger than a page touches it a page at a
# time as it grows, so a frame larger than a task's guard region faults in the guard instead of
# jumping it into the memory below. The library and its tests are built with it where the
# compiler has it. TC::stack_clash_protection (exported with the package) gives it to a
# consumer's own task code -- opt-in, as it changes how their code is compiled; the guides
# tell task code to use it. GCC 8 and Clang 11 have it.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-fstack-clash-protection TC_HAVE_STACK_CLASH_PROTECTION)
if(TC_HAVE_STACK_CLASH_PROTECTION)
  target_compile_options(tc_build_options INTERFACE -fstack-clash-protection)
endif()
add_library(tc_stack_clash_protection INTERFACE)
add_library(TC::stack_clash_protection ALIAS tc_stack_clash_protection)
set_target_properties(tc_stack_clash_protection PROPERTIES EXPORT_NAME stack_clash_protection)
target_compile_options(tc_stack_clash_protection INTERFACE
  $<$<OR:$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_GREATER_EQUAL:$<CXX_COMPILER_VERSION>,8>>,$<AND:$<CXX_COMPILER_ID:Clang>,$<VERSION_GREATER_EQUAL:$<CXX_COMPILER_VERSION>,11>>>:-fstack-clash-protection>)

if(TC_SANITIZER STREQUAL "address")
  set(TC_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 15)
    # Clang 14 cannot emit UBSan's function-type prologue in coroutines ("Cannot represent a
    # difference across sections"); the check only concerns calls through mistyped pointers.
    list(APPEND TC_SANITIZER_FLAGS -fno-sanitize=function)
  endif()
elseif(TC_SANITIZER STREQUAL "thread")
  set(TC_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
  # GCC warns about std::atomic_thread_fence under TSan (-Wtsan), which does not model fences.
  # Our own code takes a read-modify-write instead (TC::detail::SeqCstFence in the public
  # headers, SchedulerCore::StoreLoadBarrier); the remaining fences are moodycamel's, inside the
  # scheduler's queue, whose accesses TSan is told to ignore (kernel/src/SharedQueue.h). A
  # consumer's own TSan build sees no fence of ours and needs no flag.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
elseif(TC_SANITIZER STREQUAL "")
  set(TC_SANITIZER_FLAGS "")
else()
  message(FATAL_ERROR "TC_SANITIZER must be '', address or thread, not '${TC_SANITIZER}'")
endif()
if(TC_SANITIZER_FLAGS)
  # Sanitizer flags are global: every object of the program, third-party headers included,
  # has to be instrumented the same way or the fiber annotations see half a picture.
  add_compile_options(${TC_SANITIZER_FLAGS})
  add_link_options(${TC_SANITIZER_FLAGS})
endif()

if(TC_CHECKED STREQUAL "default")
  # Resolved here, not with $<CONFIG>: the value is exported with the package, and a consumer's
  # own build type must not change what the installed library was built with.
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(TC_CHECKED_DEFINE 1)
  else()
    set(TC_CHECKED_DEFINE 0)
  endif()
elseif(TC_CHECKED)
  set(TC_CHECKED_DEFINE 1)
else()
  set(TC_CHECKED_DEFINE 0)
endif()
