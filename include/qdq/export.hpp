/// \file
/// Symbol visibility for qdq's public API. qdq is compiled with hidden visibility: only declarations
/// marked QDQ_API (and the C API's QDQ_C_API, see qdq.h) are visible, and a shared libqdq's linker
/// version script (src/libqdq.map) further limits its exports to qdq_* and qdq::* symbols.
///
/// \def QDQ_API
/// Marks a declaration as part of qdq's exported API: dllexport/dllimport on Windows when QDQ_SHARED
/// is defined (the qdq::qdq target and qdq.pc define it for a shared library); elsewhere default
/// visibility when QDQ_SHARED is defined or while qdq itself is compiled (QDQ_BUILDING), so that the
/// objects of a static libqdq are the same as a shared one's (tests/abi links them into one).
#pragma once

#if defined(_WIN32)
#if defined(QDQ_SHARED) && defined(QDQ_BUILDING)
#define QDQ_API __declspec(dllexport)
#elif defined(QDQ_SHARED)
#define QDQ_API __declspec(dllimport)
#else
#define QDQ_API
#endif
#elif defined(QDQ_SHARED) || defined(QDQ_BUILDING)
#define QDQ_API __attribute__((visibility("default")))
#else
#define QDQ_API
#endif
