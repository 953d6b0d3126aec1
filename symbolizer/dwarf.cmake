# lp_symb_dwarf: inline frames and file:line (libdw), demangling
# (libiberty), separate debug files by build-id. Public header: dwarf.h.
add_library(lp_symb_dwarf STATIC ${CMAKE_CURRENT_SOURCE_DIR}/dwarf.c
	    ${CMAKE_CURRENT_SOURCE_DIR}/demangle.c)
target_include_directories(lp_symb_dwarf PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
			   PRIVATE ${LIBIBERTY_INCLUDE})
target_link_libraries(lp_symb_dwarf PUBLIC PkgConfig::LIBDW PkgConfig::LIBELF
		      PRIVATE ${LIBIBERTY} lp_common)
