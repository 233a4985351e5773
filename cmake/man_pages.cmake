# Writes corral's man pages into DIR with the binary CORRAL, one file per name that
# `corral man --list` prints (corral.1, ...), and corral-target.1 from `corral-target --help`
# (TARGET); each also gzipped (name.gz), as installed:
#   cmake -DCORRAL=build/bin/corral -DTARGET=build/bin/corral-target -DDIR=build/man -P man_pages.cmake
cmake_minimum_required(VERSION 3.22)
file(MAKE_DIRECTORY "${DIR}")
execute_process(COMMAND "${CORRAL}" man --list OUTPUT_VARIABLE pages RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "man_pages.cmake: ${CORRAL} man --list failed (${rc})")
endif()
string(STRIP "${pages}" pages)
string(REPLACE "\n" ";" pages "${pages}")
foreach(page IN LISTS pages)
  execute_process(COMMAND "${CORRAL}" man "${page}" OUTPUT_FILE "${DIR}/${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_pages.cmake: ${CORRAL} man ${page} failed (${rc})")
  endif()
endforeach()

# corral-target's page: its usage line, and where its routes are described.
execute_process(COMMAND "${TARGET}" --help OUTPUT_VARIABLE usage ERROR_VARIABLE usage)
string(STRIP "${usage}" usage)
string(REGEX REPLACE "^usage: " "" usage "${usage}")
string(REPLACE "-" "\\-" usage "${usage}")
file(WRITE "${DIR}/corral-target.1"
  ".TH CORRAL-TARGET 1 \"\" \"corral\" \"User Commands\"\n"
  ".SH NAME\ncorral-target \\- the small job API that corral's demo, tests and benchmarks use\n"
  ".SH SYNOPSIS\n${usage}\n"
  ".SH DESCRIPTION\ncorral-target serves a job API on HOST:PORT (default 127.0.0.1:8081): "
  "POST /jobs starts a job, GET /jobs/ID polls it, and routes that delay, fail or misbehave "
  "on purpose. Its routes are listed in /usr/share/doc/corral/scenarios.md.\n"
  ".SH SEE ALSO\n.BR corral (1),\n.BR corral\\-scenario (5)\n")
list(APPEND pages corral-target.1)

foreach(page IN LISTS pages)
  execute_process(COMMAND gzip -9nf -k "${DIR}/${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_pages.cmake: gzip ${page} failed (${rc})")
  endif()
endforeach()
