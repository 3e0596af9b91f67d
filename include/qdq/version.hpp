/// \file
/// qdq's version, defined once: CMake reads the three numbers below from this file.
#pragma once

#include <string_view>

#include "qdq/export.hpp"

/// Major version. From 1.0 on, it changes with incompatible API changes; while it is 0, a minor
/// release may change the API.
#define QDQ_VERSION_MAJOR 0
/// Minor version.
#define QDQ_VERSION_MINOR 1
/// Patch version: fixes only.
#define QDQ_VERSION_PATCH 0

namespace qdq {

/// The library's version, "MAJOR.MINOR.PATCH". No allocation; thread-safe.
QDQ_API std::string_view version() noexcept;

}  // namespace qdq
