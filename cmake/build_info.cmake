# Writes OUTPUT: a header with the git commit SOURCE_DIR is at, and whether its tracked files
# differ from that commit (CORRAL_GIT_COMMIT is "" when SOURCE_DIR is no git checkout, or git is
# missing). Run at every build; the header is rewritten only when it changes, so that a new
# commit recompiles one file.
set(commit "")
set(dirty 0)
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE commit RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(commit "")
  else()
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff --quiet HEAD --
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 1)
      set(dirty 1)
    endif()
  endif()
endif()
set(text "// Written by cmake/build_info.cmake at build time.\n#pragma once\n"
         "#define CORRAL_GIT_COMMIT \"${commit}\"\n#define CORRAL_GIT_DIRTY ${dirty}\n")
string(JOIN "" text ${text})
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
