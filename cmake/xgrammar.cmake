# cmake/xgrammar.cmake — xgrammar's C++ core (structured outputs; Apache-2.0) as the static library
# fg_xgrammar, built from its pinned source distribution, which scripts/setup.sh fetches with pip
# into third_party/downloads/ and checks against the sha256 below. Only the C++ core is built: no
# Python bindings (cpp/nanobind), no cpptrace, no tests; its own CMakeLists.txt is not used, since
# it sets -Werror and -flto for the whole directory and builds the bindings by default. What the
# core needs besides its own sources is bundled in the archive: picojson and the dlpack headers.
set(FG_XGRAMMAR_VERSION 0.1.27)
set(FG_XGRAMMAR_SHA256 40af7bb2891f1633ec7f660723c74a92a963307d283aca9e3b4e53a0feaf1d46)
set(FG_XGRAMMAR_ARCHIVE "${CMAKE_SOURCE_DIR}/third_party/downloads/xgrammar-${FG_XGRAMMAR_VERSION}.tar.gz"
    CACHE FILEPATH "xgrammar's source distribution (fetched by scripts/setup.sh)")

if(NOT EXISTS "${FG_XGRAMMAR_ARCHIVE}")
  message(FATAL_ERROR "fullgraph needs xgrammar ${FG_XGRAMMAR_VERSION}'s source archive for structured outputs, "
          "and ${FG_XGRAMMAR_ARCHIVE} does not exist: run scripts/setup.sh (it fetches the archive with pip "
          "and checks its sha256), or point -DFG_XGRAMMAR_ARCHIVE=... at a copy")
endif()

set(FG_XGRAMMAR_ROOT "${CMAKE_BINARY_DIR}/_deps/xgrammar-${FG_XGRAMMAR_VERSION}")
set(FG_XGRAMMAR_PREFIX "xgrammar-${FG_XGRAMMAR_VERSION}")
include(${CMAKE_SOURCE_DIR}/cmake/pinned_archive.cmake)
fg_extract_pinned(xgrammar "${FG_XGRAMMAR_ARCHIVE}" ${FG_XGRAMMAR_SHA256} "xgrammar ${FG_XGRAMMAR_VERSION}"
                  "${FG_XGRAMMAR_ROOT}"
                  "${FG_XGRAMMAR_PREFIX}/cpp" "${FG_XGRAMMAR_PREFIX}/include" "${FG_XGRAMMAR_PREFIX}/LICENSE"
                  "${FG_XGRAMMAR_PREFIX}/NOTICE" "${FG_XGRAMMAR_PREFIX}/3rdparty/picojson"
                  "${FG_XGRAMMAR_PREFIX}/3rdparty/dlpack/include")

file(GLOB FG_XGRAMMAR_SOURCES "${FG_XGRAMMAR_ROOT}/cpp/*.cc" "${FG_XGRAMMAR_ROOT}/cpp/support/*.cc")
add_library(fg_xgrammar STATIC ${FG_XGRAMMAR_SOURCES})
# Its code is C++17 and not ours: its warnings are not fullgraph's to fix, so they are off.
set_target_properties(fg_xgrammar PROPERTIES CXX_STANDARD 17 POSITION_INDEPENDENT_CODE ON)
target_compile_options(fg_xgrammar PRIVATE -w)
target_include_directories(fg_xgrammar SYSTEM PUBLIC "${FG_XGRAMMAR_ROOT}/include"
                           "${FG_XGRAMMAR_ROOT}/3rdparty/picojson" "${FG_XGRAMMAR_ROOT}/3rdparty/dlpack/include")
target_compile_definitions(fg_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0 XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
# Its log and its errors go through fullgraph's: src/grammar/xgrammar_log.cpp defines the two hooks
# that XGRAMMAR_LOG_CUSTOMIZE asks for (lines to fg::log, failed checks thrown as fg::Error).
target_compile_definitions(fg_xgrammar PRIVATE XGRAMMAR_LOG_CUSTOMIZE=1)
target_link_libraries(fg_xgrammar PUBLIC Threads::Threads)
