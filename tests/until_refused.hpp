// Submitting from outside a pool until the pool refuses: how a test learns, without sleeping, that
// the pool's destructor has begun (it refuses external submissions from then on). Shared by the
// conformance suite, stage 5's tests and the program fuzzer.
#pragma once

#include <cstddef>
#include <string>

#include "common/thread_pool.hpp"

namespace wslab::test {

struct Refusal {
  std::size_t accepted = 0;  // calls that returned before the refusal
  std::string message;       // the refusal's what()
};

// Calls submit() until it throws SubmitRefused. Any other exception passes through.
template <class Submit>
Refusal submit_until_refused(Submit&& submit) {
  Refusal refusal;
  for (;;) {
    try {
      submit();
    } catch (const SubmitRefused& e) {
      refusal.message = e.what();
      return refusal;
    }
    ++refusal.accepted;
  }
}

}  // namespace wslab::test
