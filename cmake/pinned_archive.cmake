# cmake/pinned_archive.cmake — fg_extract_pinned: extracts parts of a pinned archive that
# scripts/setup.sh fetched, once per archive (a stamp in _deps holds the sha256 of what was
# extracted), after checking the archive's sha256.
#   fg_extract_pinned(NAME ARCHIVE SHA256 WHAT REMOVE PATTERNS...)
# NAME: the stamp's name; WHAT: the archive in words, for messages; REMOVE: the folder an earlier
# extraction left, removed first; PATTERNS: the archive's paths to extract into _deps.
function(fg_extract_pinned name archive sha256 what remove)
  set(stamp "${CMAKE_BINARY_DIR}/_deps/${name}.sha256")
  set(extracted "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" extracted)
  endif()
  if(extracted STREQUAL sha256)
    return()
  endif()
  file(SHA256 "${archive}" actual)
  if(NOT actual STREQUAL sha256)
    message(FATAL_ERROR "${archive} has sha256 ${actual}, not the pinned ${sha256} of ${what}: delete it and run "
            "scripts/setup.sh")
  endif()
  file(REMOVE_RECURSE "${remove}")
  file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${CMAKE_BINARY_DIR}/_deps" PATTERNS ${ARGN})
  file(WRITE "${stamp}" "${sha256}")
  message(STATUS "fullgraph: extracted ${what} into ${CMAKE_BINARY_DIR}/_deps")
endfunction()
