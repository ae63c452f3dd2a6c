// Sanitizer reports stay visible while a test redirects stderr (GoogleTest's CaptureStderr(), the
// fuzzer's capture of expected diagnostics): the report goes to a copy of the original stderr
// taken before any redirection. Without this, a report written during a capture is swallowed
// and the test only dies with the sanitizer's exit status.
#pragma once

#include "common/config.hpp"

#if WSLAB_SANITIZED
#include <sanitizer/common_interface_defs.h>
#include <unistd.h>

#include <cstdint>
#endif

namespace wslab::test {

inline void keep_sanitizer_reports_on_stderr() {
#if WSLAB_SANITIZED
  static const int original_stderr = ::dup(2);
  if (original_stderr >= 0) {
    __sanitizer_set_report_fd(reinterpret_cast<void*>(static_cast<std::intptr_t>(original_stderr)));
  }
#endif
}

}  // namespace wslab::test
