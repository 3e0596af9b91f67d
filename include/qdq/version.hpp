// qdq's version, defined once: CMake reads the three numbers below from this file.
#pragma once

#include <string_view>

#include "qdq/export.hpp"

#define QDQ_VERSION_MAJOR 0
#define QDQ_VERSION_MINOR 1
#define QDQ_VERSION_PATCH 0

namespace qdq {

/// The library's version, "MAJOR.MINOR.PATCH". No allocation; thread-safe.
QDQ_API std::string_view version() noexcept;

}  // namespace qdq
