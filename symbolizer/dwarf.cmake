# lp_symb_dwarf: inline frames and file:line (libdw), demangling
# (libiberty), separate debug files by build-id and whether they match
# (libdeflate's CRC-32 for .gnu_debuglink). Public header: dwarf.h.
#
# The public header's name shadows the system's <dwarf.h> (the DW_* constants
# dwarf.c needs) in any target that has this directory on its -I path, so the
# library itself is built without it (its sources find "dwarf.h" next to
# them) and only its users get it.
add_library(lp_symb_dwarf STATIC ${CMAKE_CURRENT_SOURCE_DIR}/dwarf.c
	    ${CMAKE_CURRENT_SOURCE_DIR}/demangle.c)
target_include_directories(lp_symb_dwarf INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}
			   PRIVATE ${LIBIBERTY_INCLUDE})
target_link_libraries(lp_symb_dwarf PUBLIC PkgConfig::LIBDW PkgConfig::LIBELF
		      PRIVATE ${LIBIBERTY} lp_common PkgConfig::LIBDEFLATE)
