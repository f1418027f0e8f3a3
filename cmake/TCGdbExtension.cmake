# The gdb extension (tools/gdb/concurrent_tasks.py): embedded in the kernel library as an inline
# script of its .debug_gdb_scripts section (ELF on x86-64), so gdb loads it for any program
# linked with the library once the program is in gdb's auto-load safe-path, and installed under
# share/ConcurrentTasks/gdb/ for a manual `source`. guides/debugging.md says how to use both.
include(GNUInstallDirs)
set(TC_GDB_SCRIPT ${PROJECT_SOURCE_DIR}/tools/gdb/concurrent_tasks.py)
# The script enters the object through the assembler's .incbin, which no compiler cache sees:
# its hash is part of the compile definitions, and editing it reconfigures.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TC_GDB_SCRIPT})
file(SHA256 ${TC_GDB_SCRIPT} TC_GDB_SCRIPT_HASH)
function(tc_embed_gdb_script target)
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/src/DiagnosticsDump.cpp APPEND PROPERTY
               OBJECT_DEPENDS ${TC_GDB_SCRIPT})
  target_compile_definitions(${target} PRIVATE TC_GDB_SCRIPT="${TC_GDB_SCRIPT}"
                                               TC_GDB_SCRIPT_HASH=${TC_GDB_SCRIPT_HASH})
endfunction()
install(FILES ${TC_GDB_SCRIPT} DESTINATION ${CMAKE_INSTALL_DATADIR}/ConcurrentTasks/gdb)
