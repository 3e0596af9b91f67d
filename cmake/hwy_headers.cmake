# qdq_use_hwy_headers(target): compiles `target` against Highway's headers only, with hwy's include
# directories (as system headers) and definitions but not its library, so that nothing qdq builds or
# installs needs libhwy at link or run time: qdq detects the CPU itself (src/kernels/simd/targets.cc)
# and the bench's reference loops choose their target themselves.
include_guard(GLOBAL)

function(qdq_use_hwy_headers target)
  find_package(hwy REQUIRED)
  # Imported targets are local to the directory that finds them: the properties are copied by value.
  get_target_property(includes hwy::hwy INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(definitions hwy::hwy INTERFACE_COMPILE_DEFINITIONS)
  if(includes)
    target_include_directories(${target} SYSTEM PRIVATE ${includes})
  endif()
  if(definitions)
    target_compile_definitions(${target} PRIVATE ${definitions})
  endif()
endfunction()
