# Install rules and package files for qdq. Included by the top-level CMakeLists.txt when QDQ_INSTALL
# is on (the default when qdq is the top-level project).
#
# What `cmake --install <build> --prefix <prefix>` produces (paths from GNUInstallDirs):
#   <includedir>/qdq/*.hpp, qdq.h            public headers (C++, and the C API's qdq.h)
#   <libdir>/libqdq.a                        static library (default), or
#   <libdir>/libqdq.so.<version> + symlinks  shared library (-DBUILD_SHARED_LIBS=ON)
#   <bindir>/qdq                             the command-line tool, when it is built
#   <libdir>/cmake/qdq/qdqConfig.cmake       find_package(qdq) -> imported target qdq::qdq
#   <libdir>/cmake/qdq/qdqConfigVersion.cmake
#   <libdir>/cmake/qdq/qdqTargets*.cmake
#   <libdir>/pkgconfig/qdq.pc                pkg-config --cflags --libs qdq
#   <datarootdir>/doc/qdq/{LICENSE,CHANGELOG.md}
#
# Components: qdq_runtime (shared library, tool), qdq_development (headers, static library, package
# files). Every path is relative to the prefix, so a prefix chosen at install time (--prefix) works
# and the installed tree can be moved.
#
# The build tree is a package too: find_package(qdq) with qdq_DIR=<build> (or CMAKE_PREFIX_PATH=<build>)
# uses <build>/qdqConfig.cmake and the targets exported there.

include(CMakePackageConfigHelpers)

set(QDQ_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/qdq"
    CACHE STRING "Where qdqConfig.cmake and friends are installed, relative to the prefix")
set(QDQ_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where qdq.pc is installed, relative to the prefix")
mark_as_advanced(QDQ_INSTALL_CMAKEDIR QDQ_INSTALL_PKGCONFIGDIR)

# --- Headers -------------------------------------------------------------------------------------
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/qdq"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        COMPONENT qdq_development
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

# --- Link dependencies ---------------------------------------------------------------------------
# A static libqdq carries its private link libraries into qdq::qdq's interface ($<LINK_ONLY:...>), so
# a consumer needs them too: internal libraries (e.g. the SIMD kernels, if they are a target of their
# own) are installed and exported with qdq, and imported ones become find_dependency() calls in
# qdqConfig.cmake and Requires in qdq.pc. Threads is always looked for (see qdqConfig.cmake.in).
get_target_property(_qdq_type qdq TYPE)
set(_qdq_queue qdq)
set(_qdq_seen "")
set(_qdq_internal_deps "")
set(_qdq_imported_deps "")
while(_qdq_queue)
  list(POP_FRONT _qdq_queue _qdq_target)
  if(_qdq_target IN_LIST _qdq_seen)
    continue()
  endif()
  list(APPEND _qdq_seen ${_qdq_target})
  get_target_property(_qdq_libs ${_qdq_target} INTERFACE_LINK_LIBRARIES)
  if(_qdq_type STREQUAL "STATIC_LIBRARY")
    get_target_property(_qdq_private_libs ${_qdq_target} LINK_LIBRARIES)
    list(APPEND _qdq_libs ${_qdq_private_libs})
  endif()
  foreach(_qdq_lib IN LISTS _qdq_libs)
    if(_qdq_lib MATCHES "^\\$<LINK_ONLY:([^$<>]+)>$")
      set(_qdq_lib "${CMAKE_MATCH_1}")
    endif()
    if(_qdq_lib MATCHES "^::@")
      continue()  # the scope markers target_link_libraries() adds when called from another directory
    endif()
    if(_qdq_lib MATCHES "::" AND NOT TARGET "${_qdq_lib}")
      # An imported target of another directory (imported targets are directory-scoped).
      list(APPEND _qdq_imported_deps "${_qdq_lib}")
      continue()
    endif()
    if(NOT _qdq_lib OR _qdq_lib MATCHES "NOTFOUND$" OR NOT TARGET "${_qdq_lib}")
      continue()  # a plain library name or flag, or a generator expression: passed through as is
    endif()
    get_target_property(_qdq_aliased "${_qdq_lib}" ALIASED_TARGET)
    if(_qdq_aliased)
      set(_qdq_lib "${_qdq_aliased}")
    endif()
    get_target_property(_qdq_imported "${_qdq_lib}" IMPORTED)
    if(_qdq_imported)
      list(APPEND _qdq_imported_deps "${_qdq_lib}")
    elseif(NOT _qdq_lib STREQUAL "qdq")
      list(APPEND _qdq_internal_deps "${_qdq_lib}")
      list(APPEND _qdq_queue "${_qdq_lib}")
    endif()
  endforeach()
endwhile()
list(REMOVE_DUPLICATES _qdq_internal_deps)
list(REMOVE_DUPLICATES _qdq_imported_deps)

# Imported target -> CMake package and pkg-config module that provide it.
set(QDQ_CONFIG_DEPENDENCIES "")
set(_qdq_pc_requires "")
foreach(_qdq_lib IN LISTS _qdq_imported_deps)
  if(_qdq_lib STREQUAL "Threads::Threads")
    continue()
  elseif(_qdq_lib MATCHES "^hwy::")
    string(APPEND QDQ_CONFIG_DEPENDENCIES "find_dependency(hwy)\n")
    list(APPEND _qdq_pc_requires libhwy)
  else()
    message(WARNING "qdq: the installed package does not know how to find ${_qdq_lib}, which a "
                    "${_qdq_type} libqdq links; add it to cmake/install.cmake")
  endif()
endforeach()
string(STRIP "${QDQ_CONFIG_DEPENDENCIES}" QDQ_CONFIG_DEPENDENCIES)
list(REMOVE_DUPLICATES _qdq_pc_requires)

# --- Library -------------------------------------------------------------------------------------
install(TARGETS qdq ${_qdq_internal_deps}
        EXPORT qdqTargets
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT qdq_runtime
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT qdq_runtime
                NAMELINK_COMPONENT qdq_development
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT qdq_development
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# --- Command-line tool ---------------------------------------------------------------------------
# tools/qdq defines the executable (OUTPUT_NAME qdq); it exists only with QDQ_BUILD_TOOLS.
foreach(_qdq_tool_target IN ITEMS qdq_cli)
  if(TARGET ${_qdq_tool_target})
    get_target_property(_qdq_tool_type ${_qdq_tool_target} TYPE)
    if(_qdq_tool_type STREQUAL "EXECUTABLE")
      if(_qdq_type STREQUAL "SHARED_LIBRARY")
        # The installed tool finds the shared libqdq relative to itself: <prefix>/bin -> <libdir>.
        file(RELATIVE_PATH _qdq_bin_to_lib "/_/${CMAKE_INSTALL_BINDIR}" "/_/${CMAKE_INSTALL_LIBDIR}")
        set_property(TARGET ${_qdq_tool_target} APPEND PROPERTY
                     INSTALL_RPATH "$ORIGIN/${_qdq_bin_to_lib}")
      endif()
      install(TARGETS ${_qdq_tool_target}
              RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT qdq_runtime)
    endif()
  endif()
endforeach()

# --- CMake package -------------------------------------------------------------------------------
# Compatibility: while the major version is 0, a minor release may change the API, so a request for
# 0.1 accepts 0.1.x only (SameMinorVersion). From 1.0 on, semantic versioning: SameMajorVersion.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_qdq_compatibility SameMinorVersion)
else()
  set(_qdq_compatibility SameMajorVersion)
endif()

write_basic_package_version_file("${PROJECT_BINARY_DIR}/qdqConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY ${_qdq_compatibility})

# Installed config (relocatable: it finds qdqTargets.cmake next to itself).
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/qdqConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake-install/qdqConfig.cmake"
  INSTALL_DESTINATION "${QDQ_INSTALL_CMAKEDIR}")

install(EXPORT qdqTargets
        NAMESPACE qdq::
        FILE qdqTargets.cmake
        DESTINATION "${QDQ_INSTALL_CMAKEDIR}"
        COMPONENT qdq_development)
install(FILES "${PROJECT_BINARY_DIR}/cmake-install/qdqConfig.cmake"
              "${PROJECT_BINARY_DIR}/qdqConfigVersion.cmake"
        DESTINATION "${QDQ_INSTALL_CMAKEDIR}"
        COMPONENT qdq_development)

# Build-tree package: <build>/qdqConfig.cmake + <build>/qdqTargets.cmake, usable without installing.
export(EXPORT qdqTargets
       NAMESPACE qdq::
       FILE "${PROJECT_BINARY_DIR}/qdqTargets.cmake")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/qdqConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/qdqConfig.cmake"
  INSTALL_DESTINATION "${PROJECT_BINARY_DIR}"
  INSTALL_PREFIX "${PROJECT_BINARY_DIR}")

# --- pkg-config ----------------------------------------------------------------------------------
# prefix is derived from the .pc file's own location (${pcfiledir}), so the file stays right for any
# --prefix given at install time. Absolute GNUInstallDirs paths are used as they are.
if(IS_ABSOLUTE "${QDQ_INSTALL_PKGCONFIGDIR}")
  set(QDQ_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _qdq_pc_up "/_/${QDQ_INSTALL_PKGCONFIGDIR}" "/_")
  string(REGEX REPLACE "/$" "" _qdq_pc_up "${_qdq_pc_up}")
  set(QDQ_PC_PREFIX "\${pcfiledir}/${_qdq_pc_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(QDQ_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(QDQ_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# A static libqdq needs the thread library on the consumer's link line; a shared one brings it along.
# So does the C++ runtime that libqdq was compiled against (libstdc++ and libm with GCC): a C++
# compiler driver links it anyway, a C program using qdq.h through `cc ... $(pkg-config --libs qdq)`
# does not.
if(BUILD_SHARED_LIBS)
  set(QDQ_PC_CFLAGS_EXTRA " -DQDQ_SHARED")
  set(QDQ_PC_LIBS_EXTRA "")
  set(QDQ_PC_LIBS_PRIVATE "Libs.private: -pthread")
else()
  set(_qdq_cxx_runtime ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
  list(FILTER _qdq_cxx_runtime INCLUDE REGEX "^(stdc\\+\\+|c\\+\\+|c\\+\\+abi|m)$")
  list(REMOVE_DUPLICATES _qdq_cxx_runtime)
  list(TRANSFORM _qdq_cxx_runtime PREPEND "-l")
  string(REPLACE ";" " " _qdq_cxx_runtime "${_qdq_cxx_runtime}")
  set(QDQ_PC_CFLAGS_EXTRA "")
  set(QDQ_PC_LIBS_EXTRA " -pthread")
  if(_qdq_cxx_runtime)
    string(APPEND QDQ_PC_LIBS_EXTRA " ${_qdq_cxx_runtime}")
  endif()
  set(QDQ_PC_LIBS_PRIVATE "")
endif()
# A static libqdq's dependencies are public requirements: plain `pkg-config --libs qdq` must list them.
string(REPLACE ";" ", " QDQ_PC_REQUIRES "${_qdq_pc_requires}")
if(QDQ_PC_REQUIRES)
  set(QDQ_PC_REQUIRES "Requires: ${QDQ_PC_REQUIRES}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/qdq.pc.in" "${PROJECT_BINARY_DIR}/qdq.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/qdq.pc"
        DESTINATION "${QDQ_INSTALL_PKGCONFIGDIR}"
        COMPONENT qdq_development)

# --- Documents -----------------------------------------------------------------------------------
# Not CMAKE_INSTALL_DOCDIR: in a subproject build that names the top-level project's directory.
set(QDQ_INSTALL_DOCDIR "${CMAKE_INSTALL_DATAROOTDIR}/doc/qdq"
    CACHE STRING "Where LICENSE and CHANGELOG.md are installed, relative to the prefix")
mark_as_advanced(QDQ_INSTALL_DOCDIR)
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/CHANGELOG.md"
        DESTINATION "${QDQ_INSTALL_DOCDIR}"
        COMPONENT qdq_development)
