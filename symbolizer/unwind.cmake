# lp_symb_unwind: stack-delta tables from CFI (cfi.h) and the unwinder
# (unwind.h). No I/O of its own; libelf only to find sections.
add_library(lp_symb_unwind STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cfi.c
	    ${CMAKE_CURRENT_SOURCE_DIR}/unwind.c)
target_include_directories(lp_symb_unwind PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(lp_symb_unwind PUBLIC PkgConfig::LIBELF PRIVATE lp_common)
