# Compares a shared library's exported symbols with a committed list (see CMakeLists.txt here):
#   cmake -DNM=<nm> -DLIBRARY=<libqdq.so> -DEXPECTED=<libqdq.symbols or empty> -DACTUAL=<output file>
#         -P check_symbols.cmake
# Every exported symbol must belong to qdq's API (qdq_* for C, qdq::* and qdq::Error's typeinfo and
# vtable for C++). With EXPECTED, the sorted, demangled list must equal that file (lines starting
# with # are comments). The list found is written to ACTUAL either way.
cmake_minimum_required(VERSION 3.21)

execute_process(COMMAND "${NM}" -D --defined-only -C "${LIBRARY}" OUTPUT_VARIABLE _nm RESULT_VARIABLE _status
                ERROR_VARIABLE _error)
if(NOT _status EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only -C ${LIBRARY} failed (${_status}): ${_error}")
endif()
string(REPLACE "\n" ";" _lines "${_nm}")
set(_actual "")
set(_foreign "")
foreach(_line IN LISTS _lines)
  # "<address> <type letter> <demangled name, which may contain spaces>"
  if(NOT _line MATCHES "^[0-9a-fA-F]* *[A-Za-z] (.+)$")
    continue()
  endif()
  set(_name "${CMAKE_MATCH_1}")
  list(APPEND _actual "${_name}")
  if(NOT _name MATCHES "^(qdq_|qdq::|typeinfo for qdq::|typeinfo name for qdq::|vtable for qdq::)")
    list(APPEND _foreign "${_name}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _actual)
list(SORT _actual)
string(REPLACE ";" "\n" _actual_text "${_actual}")
file(WRITE "${ACTUAL}" "${_actual_text}\n")
list(LENGTH _actual _count)

set(_failed FALSE)
if(_foreign)
  string(REPLACE ";" "\n  " _foreign_text "${_foreign}")
  message(SEND_ERROR "${LIBRARY} exports symbols outside qdq's API (see src/libqdq.map):\n  ${_foreign_text}")
  set(_failed TRUE)
endif()
if(NOT _actual)
  message(SEND_ERROR "${LIBRARY} exports no symbols at all")
  set(_failed TRUE)
endif()

if(EXPECTED)
  file(STRINGS "${EXPECTED}" _expected)
  list(FILTER _expected EXCLUDE REGEX "^(#.*)?$")
  list(SORT _expected)
  set(_missing ${_expected})
  list(REMOVE_ITEM _missing ${_actual})
  set(_added ${_actual})
  list(REMOVE_ITEM _added ${_expected})
  if(_missing OR _added)
    string(REPLACE ";" "\n  - " _missing_text "${_missing}")
    string(REPLACE ";" "\n  + " _added_text "${_added}")
    message(SEND_ERROR "${LIBRARY}'s exported symbols differ from ${EXPECTED}:\n"
                       "  - ${_missing_text}\n  + ${_added_text}\n"
                       "If the API change is intended, update the list from ${ACTUAL} (keep its header).")
    set(_failed TRUE)
  endif()
endif()

if(_failed)
  message(FATAL_ERROR "ABI check failed")
endif()
message(STATUS "${LIBRARY}: ${_count} exported symbols, all in qdq's API")
