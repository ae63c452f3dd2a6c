// Runs the driver's own executable again as a child process and collects its standard output.
// Each configuration is measured in several fresh processes because, on this kind of machine,
// one process settles into its own speed (thread placement, allocator state) and repetitions
// inside it agree with each other more than with the next process.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace wslab::bench {

struct ChildOutcome {
  std::string output;      // everything the child wrote to stdout
  bool timed_out = false;  // killed after the time limit
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when a signal ended it
  bool succeeded() const noexcept { return !timed_out && signal == 0 && exit_code == 0; }
  std::string describe_failure() const {
    if (timed_out) return "timed out (a hang?) and was killed";
    if (signal != 0) return std::string("crashed with signal ") + ::strsignal(signal);
    return "exited with code " + std::to_string(exit_code);
  }
};

// Runs `program` with `args`; its stderr goes straight to ours (progress and diagnostics stay
// visible), its stdout is captured. A child still running after `timeout` is killed.
inline ChildOutcome run_child(const std::string& program, const std::vector<std::string>& args,
                              std::chrono::seconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw std::system_error(errno, std::generic_category(), "fork");
  }
  if (pid == 0) {
    // In the child only async-signal-safe calls until exec.
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::execv(program.c_str(), argv.data());
    _exit(127);
  }
  ::close(pipe_fds[1]);

  ChildOutcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      outcome.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the child closed stdout (exited)
    outcome.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  if (outcome.timed_out) outcome.signal = 0;
  return outcome;
}

}  // namespace wslab::bench
