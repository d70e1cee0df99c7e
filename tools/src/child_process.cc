#include "muonplan/tools/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace muonplan {
namespace {

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP};
volatile sig_atomic_t g_child = 0;     // the child's pid while it runs, else 0
volatile sig_atomic_t g_received = 0;  // the last forwarded signal

void forward(int sig) {
  g_received = sig;
  if (g_child > 0) kill(pid_t(g_child), sig);
}

// Installs `forward` for the signals above while alive; restores what was there before.
class ForwardSignals {
 public:
  ForwardSignals() {
    g_received = 0;
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &sa, &old_[i]);
  }
  ~ForwardSignals() {
    g_child = 0;
    for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction old_[std::size(kForwarded)]{};
};

pid_t spawn(const std::vector<std::string>& argv, int err_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  ChildResult out;
  {
    ForwardSignals guard;  // before the spawn: a signal from here on reaches the child
    pid_t pid = 0;
    try {
      pid = spawn(argv, fds[1]);
    } catch (...) {
      close(fds[0]);
      close(fds[1]);
      throw;
    }
    g_child = pid;
    if (g_received != 0) kill(pid, g_received);  // arrived between install and spawn
    close(fds[1]);
    char buf[4096];
    for (;;) {
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0) out.stderr_text.append(buf, size_t(n));
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }  // the previous handlers are back
  if (g_received != 0) throw Interrupted(g_received);
  return out;
}

}  // namespace muonplan
