# Writes corral's shell completions into DIR with the binary CORRAL:
#   corral (bash), _corral (zsh), corral.fish (fish), each from `corral completion SHELL`.
#   cmake -DCORRAL=build/bin/corral -DDIR=build/completions -P completions.cmake
cmake_minimum_required(VERSION 3.22)
file(MAKE_DIRECTORY "${DIR}")
foreach(pair "bash:corral" "zsh:_corral" "fish:corral.fish")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 shell)
  list(GET pair 1 file)
  execute_process(COMMAND "${CORRAL}" completion ${shell} OUTPUT_FILE "${DIR}/${file}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "completions.cmake: ${CORRAL} completion ${shell} failed (${rc})")
  endif()
endforeach()
