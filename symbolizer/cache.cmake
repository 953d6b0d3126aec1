# lp_symb_cache: the persistent SQLite cache of symbol and stack-delta
# blobs. Public header: cache.h; schema: schema/cache.sql (embedded).
add_library(lp_symb_cache STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cache.c)
target_include_directories(lp_symb_cache PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(lp_symb_cache PUBLIC PkgConfig::SQLITE3 PRIVATE PkgConfig::ZLIB lp_common)
