# Driver for the consumer tests (see CMakeLists.txt here):
#   cmake -DSETTINGS=<build>/tests/consumer/consumer_settings.cmake -DMODE=<mode> [-DCONFIG=<cfg>]
#         -P run_consumer.cmake
# MODE: install | find_package | build_tree | pkg_config | add_subdirectory
cmake_minimum_required(VERSION 3.21)

if(NOT SETTINGS OR NOT MODE)
  message(FATAL_ERROR "usage: cmake -DSETTINGS=... -DMODE=... [-DCONFIG=...] -P run_consumer.cmake")
endif()
include("${SETTINGS}")
if(NOT CONFIG)
  set(CONFIG Release)
endif()

function(run)
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
endfunction()

function(require_file path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "missing: ${path}")
  endif()
endfunction()

# The one file named `name` under `dir`, or a fatal error.
function(find_one out dir name)
  file(GLOB_RECURSE _found LIST_DIRECTORIES false "${dir}/*/${name}")
  list(LENGTH _found _count)
  if(NOT _count EQUAL 1)
    message(FATAL_ERROR "expected one ${name} under ${dir}, found ${_count}: ${_found}")
  endif()
  set(${out} "${_found}" PARENT_SCOPE)
endfunction()

# Configure, build and run the consumer project in `CONSUMER_SOURCE_DIR/<project>`, in a fresh
# binary directory (BINARY_DIR, default <consumer binary dir>/<mode>); CONFIGURE_ONLY stops after
# configuring.
function(build_and_run project)
  cmake_parse_arguments(PARSE_ARGV 1 _opt "CONFIGURE_ONLY" "BINARY_DIR" "")
  set(_src "${CONSUMER_SOURCE_DIR}/${project}")
  set(_bin "${CONSUMER_BINARY_DIR}/${MODE}")
  if(_opt_BINARY_DIR)
    set(_bin "${_opt_BINARY_DIR}")
  endif()
  file(REMOVE_RECURSE "${_bin}")
  set(_args -S "${_src}" -B "${_bin}" -G "${CONSUMER_GENERATOR}"
            "-DCMAKE_CXX_COMPILER=${CONSUMER_CXX_COMPILER}" "-DCMAKE_C_COMPILER=${CONSUMER_C_COMPILER}"
            "-DCMAKE_BUILD_TYPE=${CONFIG}")
  if(CONSUMER_MAKE_PROGRAM)
    list(APPEND _args "-DCMAKE_MAKE_PROGRAM=${CONSUMER_MAKE_PROGRAM}")
  endif()
  if(CONSUMER_CXX_COMPILER_LAUNCHER)
    list(APPEND _args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CONSUMER_CXX_COMPILER_LAUNCHER}")
  endif()
  if(CONSUMER_C_COMPILER_LAUNCHER)
    list(APPEND _args "-DCMAKE_C_COMPILER_LAUNCHER=${CONSUMER_C_COMPILER_LAUNCHER}")
  endif()
  if(CONSUMER_LINK_FLAGS)
    list(APPEND _args "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
  endif()
  run("${CMAKE_COMMAND}" ${_args} ${_opt_UNPARSED_ARGUMENTS})
  if(_opt_CONFIGURE_ONLY)
    return()
  endif()
  run("${CMAKE_COMMAND}" --build "${_bin}" --config "${CONFIG}" --parallel "${CONSUMER_JOBS}")
  # Every project builds round_trip (C++) and round_trip_c (C).
  foreach(_program round_trip round_trip_c)
    set(_ran FALSE)
    foreach(_candidate "${_bin}/${_program}" "${_bin}/${CONFIG}/${_program}" "${_bin}/${_program}.exe"
                       "${_bin}/${CONFIG}/${_program}.exe")
      if(EXISTS "${_candidate}" AND NOT _ran)
        run("${_candidate}")
        set(_ran TRUE)
      endif()
    endforeach()
    if(NOT _ran)
      message(FATAL_ERROR "${_program} was not built in ${_bin}")
    endif()
  endforeach()
endfunction()

if(MODE STREQUAL "install")
  # A fresh install of this build, then a look at what it contains.
  file(REMOVE_RECURSE "${QDQ_PREFIX}")
  run("${CMAKE_COMMAND}" --install "${QDQ_BINARY_DIR}" --prefix "${QDQ_PREFIX}" --config "${CONFIG}")

  file(GLOB _headers RELATIVE "${QDQ_SOURCE_DIR}/include/qdq" "${QDQ_SOURCE_DIR}/include/qdq/*.hpp"
       "${QDQ_SOURCE_DIR}/include/qdq/*.h")
  file(GLOB _installed RELATIVE "${QDQ_PREFIX}/${QDQ_INSTALL_INCLUDEDIR}/qdq"
       "${QDQ_PREFIX}/${QDQ_INSTALL_INCLUDEDIR}/qdq/*")
  list(SORT _headers)
  list(SORT _installed)
  if(NOT _headers STREQUAL _installed OR NOT _headers)
    message(FATAL_ERROR "installed headers [${_installed}] differ from include/qdq [${_headers}]")
  endif()
  if(QDQ_SHARED)
    file(GLOB _libraries "${QDQ_PREFIX}/${QDQ_INSTALL_LIBDIR}/libqdq.so*")
  else()
    file(GLOB _libraries "${QDQ_PREFIX}/${QDQ_INSTALL_LIBDIR}/libqdq.a")
  endif()
  if(NOT _libraries)
    message(FATAL_ERROR "no libqdq in ${QDQ_PREFIX}/${QDQ_INSTALL_LIBDIR}")
  endif()
  foreach(_doc LICENSE CHANGELOG.md)
    find_one(_installed_doc "${QDQ_PREFIX}" "${_doc}")
  endforeach()
  if(QDQ_TOOL)
    # The installed tool runs (a shared libqdq is found through its RUNPATH) and knows its version.
    set(_tool "${QDQ_PREFIX}/${QDQ_INSTALL_BINDIR}/${QDQ_TOOL}")
    require_file("${_tool}")
    execute_process(COMMAND "${_tool}" --version OUTPUT_VARIABLE _tool_version
                    COMMAND_ECHO STDOUT COMMAND_ERROR_IS_FATAL ANY)
    if(NOT _tool_version MATCHES "${QDQ_VERSION}")
      message(FATAL_ERROR "${_tool} --version printed '${_tool_version}', expected ${QDQ_VERSION}")
    endif()
  endif()
  find_one(_config "${QDQ_PREFIX}" qdqConfig.cmake)
  get_filename_component(_config_dir "${_config}" DIRECTORY)
  require_file("${_config_dir}/qdqTargets.cmake")
  find_one(_pc "${QDQ_PREFIX}" qdq.pc)

  # Version compatibility of the package (see cmake/install.cmake): 0.x accepts the same minor only.
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$" _ "${QDQ_VERSION}")
  set(_major ${CMAKE_MATCH_1})
  set(_minor ${CMAKE_MATCH_2})
  set(_patch ${CMAKE_MATCH_3})
  math(EXPR _next_minor "${_minor} + 1")
  math(EXPR _next_major "${_major} + 1")
  set(_cases "${_major}.${_minor}:TRUE" "${QDQ_VERSION}:TRUE" "${_major}.${_next_minor}:FALSE"
             "${_next_major}.0:FALSE")
  if(_major EQUAL 0 AND _minor GREATER 0)
    math(EXPR _prev_minor "${_minor} - 1")
    list(APPEND _cases "0.${_prev_minor}:FALSE")
  elseif(_major GREATER 0 AND _minor GREATER 0)
    list(APPEND _cases "${_major}.0:TRUE")
  endif()
  foreach(_case IN LISTS _cases)
    string(REPLACE ":" ";" _case "${_case}")
    list(GET _case 0 PACKAGE_FIND_VERSION)
    list(GET _case 1 _want)
    string(REPLACE "." ";" _parts "${PACKAGE_FIND_VERSION}.0.0")
    list(GET _parts 0 PACKAGE_FIND_VERSION_MAJOR)
    list(GET _parts 1 PACKAGE_FIND_VERSION_MINOR)
    list(GET _parts 2 PACKAGE_FIND_VERSION_PATCH)
    set(PACKAGE_FIND_VERSION_RANGE FALSE)
    unset(PACKAGE_VERSION_COMPATIBLE)
    include("${_config_dir}/qdqConfigVersion.cmake")
    if(NOT PACKAGE_VERSION STREQUAL QDQ_VERSION)
      message(FATAL_ERROR "qdqConfigVersion.cmake says ${PACKAGE_VERSION}, expected ${QDQ_VERSION}")
    endif()
    if((_want AND NOT PACKAGE_VERSION_COMPATIBLE) OR (NOT _want AND PACKAGE_VERSION_COMPATIBLE))
      message(FATAL_ERROR "find_package(qdq ${PACKAGE_FIND_VERSION}) against ${QDQ_VERSION}: "
                          "compatible=${PACKAGE_VERSION_COMPATIBLE}, expected ${_want}")
    endif()
  endforeach()
  message(STATUS "installed qdq ${QDQ_VERSION} into ${QDQ_PREFIX}")

elseif(MODE STREQUAL "find_package")
  find_one(_config "${QDQ_PREFIX}" qdqConfig.cmake)
  get_filename_component(_config_dir "${_config}" DIRECTORY)
  build_and_run(find_package "-DCMAKE_PREFIX_PATH=${QDQ_PREFIX}" "-DQDQ_EXPECTED_DIR=${_config_dir}")

elseif(MODE STREQUAL "build_tree")
  build_and_run(find_package "-Dqdq_DIR=${QDQ_BINARY_DIR}" "-DQDQ_EXPECTED_DIR=${QDQ_BINARY_DIR}")

elseif(MODE STREQUAL "pkg_config")
  find_one(_pc "${QDQ_PREFIX}" qdq.pc)
  get_filename_component(_pc_dir "${_pc}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${_pc_dir}")
  find_program(_pkg_config NAMES pkg-config pkgconf REQUIRED)
  execute_process(COMMAND "${_pkg_config}" --modversion qdq OUTPUT_VARIABLE _version
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  if(NOT _version STREQUAL QDQ_VERSION)
    message(FATAL_ERROR "pkg-config --modversion qdq: ${_version}, expected ${QDQ_VERSION}")
  endif()
  # 1. CMake's FindPkgConfig.
  build_and_run(pkg_config)
  # 2. A plain compiler command line: c++ -std=c++20 round_trip.cpp $(pkg-config --cflags --libs qdq)
  execute_process(COMMAND "${_pkg_config}" --cflags --libs qdq OUTPUT_VARIABLE _flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  separate_arguments(_flags UNIX_COMMAND "${_flags}")
  separate_arguments(_link_flags UNIX_COMMAND "${CONSUMER_LINK_FLAGS}")
  set(_program "${CONSUMER_BINARY_DIR}/pkg_config/round_trip_cli")
  run("${CONSUMER_CXX_COMPILER}" -std=c++20 -O1 "${CONSUMER_SOURCE_DIR}/round_trip.cpp"
      ${_flags} ${_link_flags} -o "${_program}")
  if(QDQ_SHARED)
    set(ENV{LD_LIBRARY_PATH} "${QDQ_PREFIX}/${QDQ_INSTALL_LIBDIR}:$ENV{LD_LIBRARY_PATH}")
  endif()
  run("${_program}")
  # 3. The C API from C, linked by the C compiler: cc -std=c11 round_trip_c.c $(pkg-config ...)
  set(_c_program "${CONSUMER_BINARY_DIR}/pkg_config/round_trip_c_cli")
  run("${CONSUMER_C_COMPILER}" -std=c11 -Wall -Wextra -pedantic -Werror -O1 "-DQDQ_EXPECTED_VERSION=\"${QDQ_VERSION}\""
      "${CONSUMER_SOURCE_DIR}/round_trip_c.c" ${_flags} ${_link_flags} -o "${_c_program}")
  run("${_c_program}")

elseif(MODE STREQUAL "add_subdirectory")
  # Compiling the vectorised kernels once per CPU target takes minutes on a small machine, so unless
  # CONSUMER_BUILD_SIMD is set the subproject is configured with QDQ_SIMD as this build has it (which
  # checks qdq's CMake code as a subproject, SIMD part included) and built without it.
  set(_args "-DQDQ_SOURCE_DIR=${QDQ_SOURCE_DIR}" "-DBUILD_SHARED_LIBS=${QDQ_SHARED}"
            "-DQDQ_SANITIZE=${QDQ_SANITIZE_SETTING}")
  if(QDQ_SIMD_SETTING AND NOT CONSUMER_BUILD_SIMD)
    build_and_run(add_subdirectory CONFIGURE_ONLY BINARY_DIR "${CONSUMER_BINARY_DIR}/${MODE}-simd"
                  ${_args} -DQDQ_SIMD=ON)
    set(QDQ_SIMD_SETTING OFF)
  endif()
  build_and_run(add_subdirectory ${_args} "-DQDQ_SIMD=${QDQ_SIMD_SETTING}")

else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()
