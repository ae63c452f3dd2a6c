// Identifies the calling thread cheaply (the address of a thread_local): a forked job compares
// it with its forker's to tell whether it was stolen ("migrated"), which the adaptive splitter of
// range_splitter.hpp uses to split more where work is being stolen.
#pragma once

namespace wslab {

inline const void* this_thread_tag() noexcept {
  thread_local const char tag = 0;
  return &tag;
}

}  // namespace wslab
