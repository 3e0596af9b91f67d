/// \file
/// Symbol visibility for qdq's public API. A shared build hides every symbol except those marked
/// QDQ_API; a static build (the default) leaves the macro empty.
///
/// \def QDQ_API
/// Marks a declaration as part of qdq's exported API: default visibility (or dllexport/dllimport on
/// Windows) when QDQ_SHARED is defined, which the qdq::qdq target and qdq.pc do for a shared
/// library; empty otherwise.
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
