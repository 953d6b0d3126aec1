# lp_symb_cache: the persistent SQLite cache of symbol and stack-delta
# blobs, and the content identities it is keyed by. Public headers: cache.h,
# ident.h; schema: schema/cache.sql (embedded).
#
# The same file doubles as the build-time script that embeds cache.sql as a
# NUL-terminated C string (cmake -P cache.cmake), so the build needs no xxd.

if(CMAKE_SCRIPT_MODE_FILE)
	# cmake -DLP_EMBED_IN=<file> -DLP_EMBED_OUT=<file.c> -DLP_EMBED_NAME=<symbol> -P cache.cmake
	# defines: const char <symbol>[] (the file's bytes, then a NUL)
	file(READ "${LP_EMBED_IN}" lp_hex HEX)
	string(LENGTH "${lp_hex}" lp_len)
	if(lp_len EQUAL 0)
		message(FATAL_ERROR "cache.cmake: ${LP_EMBED_IN} is empty")
	endif()
	string(REGEX REPLACE "(..)" "0x\\1," lp_body "${lp_hex}")
	string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
	       "\\1\n\t" lp_body "${lp_body}")
	get_filename_component(lp_in_name "${LP_EMBED_IN}" NAME)
	file(WRITE "${LP_EMBED_OUT}"
	     "/* Generated from ${lp_in_name} by cache.cmake; do not edit. */\n"
	     "extern const char ${LP_EMBED_NAME}[];\n\n"
	     "const char ${LP_EMBED_NAME}[] = {\n\t${lp_body}0x00\n};\n")
	return()
endif()

set(lp_cache_gen ${CMAKE_CURRENT_BINARY_DIR}/cache-gen)
file(MAKE_DIRECTORY ${lp_cache_gen})
add_custom_command(
	OUTPUT ${lp_cache_gen}/cache_sql.c
	COMMAND ${CMAKE_COMMAND} -DLP_EMBED_IN=${PROJECT_SOURCE_DIR}/schema/cache.sql
		-DLP_EMBED_OUT=${lp_cache_gen}/cache_sql.c -DLP_EMBED_NAME=symb_cache_sql
		-P ${CMAKE_CURRENT_LIST_FILE}
	DEPENDS ${PROJECT_SOURCE_DIR}/schema/cache.sql ${CMAKE_CURRENT_LIST_FILE}
	COMMENT "embedding cache.sql"
	VERBATIM)

find_package(Threads REQUIRED) # pthread_once (in libc itself since glibc 2.34)
# ident.c: the content identities the cache is keyed by (SHA-256, OpenSSL's
# libcrypto, Debian libssl-dev; it uses the CPU's SHA extensions)
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
add_library(lp_symb_cache STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cache.c
	    ${CMAKE_CURRENT_SOURCE_DIR}/ident.c ${lp_cache_gen}/cache_sql.c)
target_include_directories(lp_symb_cache PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(lp_symb_cache PUBLIC PkgConfig::SQLITE3
		      PRIVATE lp_common Threads::Threads PkgConfig::LIBCRYPTO)
