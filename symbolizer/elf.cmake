# lp_symb_elf: function symbols, PT_LOAD segments and build-id of ELF files
# (libelf). Public header: elfsym.h.
find_package(Threads REQUIRED) # pthread_once (in libc itself since glibc 2.34)
add_library(lp_symb_elf STATIC ${CMAKE_CURRENT_SOURCE_DIR}/elfsym.c)
target_include_directories(lp_symb_elf PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(lp_symb_elf PRIVATE PkgConfig::LIBELF lp_common Threads::Threads)
