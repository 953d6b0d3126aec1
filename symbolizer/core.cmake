# Needs the ELF and output pieces, and is only built with the whole project.
if(NOT TARGET lp_symb_elf OR NOT TARGET lp_writers OR NOT TARGET lp_symb_unwind
   OR NOT TARGET lp_symb_dwarf OR NOT TARGET lp_symb_cache OR NOT "cli" IN_LIST LOWPROF_COMPONENTS)
	return()
endif()

# lp_symb: ingest, aggregation and profile building (no transport), so that
# the live ring, capture replay and tests share it.
add_library(lp_symb STATIC ${CMAKE_CURRENT_SOURCE_DIR}/state.c ${CMAKE_CURRENT_SOURCE_DIR}/build.c
	    ${CMAKE_CURRENT_SOURCE_DIR}/objects.c)
target_include_directories(lp_symb PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(lp_symb PUBLIC lp_symb_elf lp_writers lp_symb_unwind lp_symb_dwarf
		      lp_symb_cache lp_schema lp_common)

pkg_check_modules(LIBSECCOMP REQUIRED IMPORTED_TARGET libseccomp)
add_executable(lowprof-symbolizer ${CMAKE_CURRENT_SOURCE_DIR}/main.c ${CMAKE_CURRENT_SOURCE_DIR}/run.c
	       ${CMAKE_CURRENT_SOURCE_DIR}/sandbox.c)
target_link_libraries(lowprof-symbolizer PRIVATE lp_symb PkgConfig::LIBCAP PkgConfig::LIBSECCOMP)
set_target_properties(lowprof-symbolizer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
