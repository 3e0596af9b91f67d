# The fuzz harness library, shared by fuzz/CMakeLists.txt and tests/robustness/CMakeLists.txt
# (include()d from either; defines qdq_fuzz_harness once).
if(NOT TARGET qdq_fuzz_harness)
  set(_qdq_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
  add_library(qdq_fuzz_harness STATIC ${_qdq_fuzz_dir}/operator_harness.cpp)
  target_include_directories(qdq_fuzz_harness PUBLIC ${_qdq_fuzz_dir})
  # The type lists (src/types/type_lists.hpp) follow the library's one type list.
  target_include_directories(qdq_fuzz_harness PRIVATE ${_qdq_fuzz_dir}/../src)
  target_link_libraries(qdq_fuzz_harness PUBLIC qdq::qdq)
  find_package(Threads REQUIRED)
  target_link_libraries(qdq_fuzz_harness PRIVATE Threads::Threads qdq_warnings)
  if(TARGET qdq_onnx)
    target_sources(qdq_fuzz_harness PRIVATE ${_qdq_fuzz_dir}/onnx_harness.cpp)
    target_link_libraries(qdq_fuzz_harness PUBLIC qdq_onnx)
    target_compile_definitions(qdq_fuzz_harness PUBLIC QDQ_FUZZ_HAVE_ONNX=1)
  endif()
endif()
