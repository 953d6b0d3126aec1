# lp_symb_out: the symbolizer's output writers (pprof, folded stacks, HTML
# flame graph; see profile.h). Included by symbolizer/CMakeLists.txt.
#
# The same file doubles as the build-time script that embeds flamegraph.html
# as a C array (cmake -P output.cmake), so the build needs no xxd.

if(CMAKE_SCRIPT_MODE_FILE)
	# cmake -DLP_EMBED_IN=<file> -DLP_EMBED_OUT=<file.c> -DLP_EMBED_NAME=<symbol> -P output.cmake
	# defines: const unsigned char <symbol>[]; const size_t <symbol>_len;
	file(READ "${LP_EMBED_IN}" lp_hex HEX)
	string(LENGTH "${lp_hex}" lp_len)
	if(lp_len EQUAL 0)
		message(FATAL_ERROR "output.cmake: ${LP_EMBED_IN} is empty")
	endif()
	math(EXPR lp_len "${lp_len} / 2")
	string(REGEX REPLACE "(..)" "0x\\1," lp_body "${lp_hex}")
	string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
	       "\\1\n\t" lp_body "${lp_body}")
	get_filename_component(lp_in_name "${LP_EMBED_IN}" NAME)
	file(WRITE "${LP_EMBED_OUT}"
	     "/* Generated from ${lp_in_name} by output.cmake; do not edit. */\n"
	     "#include <stddef.h>\n\n"
	     "extern const unsigned char ${LP_EMBED_NAME}[];\n"
	     "extern const size_t ${LP_EMBED_NAME}_len;\n\n"
	     "const unsigned char ${LP_EMBED_NAME}[] = {\n\t${lp_body}\n};\n"
	     "const size_t ${LP_EMBED_NAME}_len = ${lp_len};\n")
	return()
endif()

set(lp_out_gen ${CMAKE_CURRENT_BINARY_DIR}/out-gen)
file(MAKE_DIRECTORY ${lp_out_gen})

add_custom_command(
	OUTPUT ${lp_out_gen}/profile.pb-c.c ${lp_out_gen}/profile.pb-c.h
	COMMAND ${PROTOC_C} --proto_path=${CMAKE_CURRENT_SOURCE_DIR} --c_out=${lp_out_gen}
		${CMAKE_CURRENT_SOURCE_DIR}/profile.proto
	DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/profile.proto
	COMMENT "protoc-c: profile.proto"
	VERBATIM)

add_custom_command(
	OUTPUT ${lp_out_gen}/flamegraph_html.c
	COMMAND ${CMAKE_COMMAND} -DLP_EMBED_IN=${CMAKE_CURRENT_SOURCE_DIR}/flamegraph.html
		-DLP_EMBED_OUT=${lp_out_gen}/flamegraph_html.c -DLP_EMBED_NAME=symb_flamegraph_html
		-P ${CMAKE_CURRENT_LIST_FILE}
	DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/flamegraph.html ${CMAKE_CURRENT_LIST_FILE}
	COMMENT "embedding flamegraph.html"
	VERBATIM)

add_library(lp_symb_out STATIC
	pprof.c
	folded.c
	flamegraph.c
	${lp_out_gen}/profile.pb-c.c
	${lp_out_gen}/profile.pb-c.h
	${lp_out_gen}/flamegraph_html.c)
target_include_directories(lp_symb_out PUBLIC ${CMAKE_CURRENT_SOURCE_DIR} ${lp_out_gen})
target_link_libraries(lp_symb_out PUBLIC PkgConfig::PROTOBUFC PkgConfig::LIBDEFLATE lp_common)
