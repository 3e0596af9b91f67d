#include "qdq/version.hpp"

#define QDQ_STRINGIFY_(x) #x
#define QDQ_STRINGIFY(x) QDQ_STRINGIFY_(x)

namespace qdq {

std::string_view version() noexcept {
  return QDQ_STRINGIFY(QDQ_VERSION_MAJOR) "." QDQ_STRINGIFY(QDQ_VERSION_MINOR) "." QDQ_STRINGIFY(QDQ_VERSION_PATCH);
}

}  // namespace qdq
