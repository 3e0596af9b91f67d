// Symbol visibility for qdq's public API. A shared build hides every symbol except those marked
// QDQ_API; a static build (the default) leaves the macro empty.
#pragma once

#if defined(QDQ_SHARED) && defined(_WIN32)
#if defined(QDQ_BUILDING)
#define QDQ_API __declspec(dllexport)
#else
#define QDQ_API __declspec(dllimport)
#endif
#elif defined(QDQ_SHARED)
#define QDQ_API __attribute__((visibility("default")))
#else
#define QDQ_API
#endif
