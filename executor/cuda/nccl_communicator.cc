// The NCCL communicator (nccl_communicator.h). The NCCL communicator is non-blocking
// (config.blocking = 0), so no NCCL call can hang this thread: setup, group launches and
// completion are all polled against a deadline, with the control communicator serviced
// meanwhile, and a failure aborts NCCL instead of waiting on a dead peer.
#include "muonplan/exec/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"

namespace muonplan::exec {
namespace {

using Clock = std::chrono::steady_clock;
using cuda::check;

// control->poll() runs at most this often while a wait spins (it may probe other ranks).
constexpr auto kControlPollPeriod = std::chrono::milliseconds(1);

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::max(seconds, 0.0)));
}

// Spins with yields for the first ~100 us (an exchange inside a node often lands by then),
// then sleeps in 50 us steps.
class Backoff {
 public:
  void pause() {
    if (++spins_ < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  int spins_ = 0;
};

// Set by a host function queued on the NCCL stream after an exchange: the waiting thread sleeps
// on it instead of in fixed steps, and wakes when the exchange is done (or to poll).
struct Signal {
  std::mutex mutex;
  std::condition_variable cv;
  bool fired = false;
  void fire() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      fired = true;
    }
    cv.notify_all();
  }
  void wait_for(Clock::duration d) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait_for(lock, d, [this] { return fired; });
  }
};

// cudaLaunchHostFunc's callback: it owns one reference to the signal (no CUDA calls here).
void CUDART_CB fire_signal(void* data) {
  auto* signal = static_cast<std::shared_ptr<Signal>*>(data);
  (*signal)->fire();
  delete signal;
}

class NcclCommunicator;

class NcclRequest : public Request {
 public:
  NcclRequest(NcclCommunicator& comm, cudaEvent_t done, std::shared_ptr<Signal> signal)
      : comm_(comm), done_(done), signal_(std::move(signal)) {}
  ~NcclRequest() override {
    try {
      wait();
    } catch (...) {
      // A destructor cannot report it; an explicit wait() would have.
    }
    if (done_) cudaEventDestroy(done_);
  }
  void wait() override;

 private:
  NcclCommunicator& comm_;
  cudaEvent_t done_;
  std::shared_ptr<Signal> signal_;
  bool finished_ = false;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(CudaBackend& backend, std::unique_ptr<Communicator> control, double timeout_s)
      : backend_(backend), control_(std::move(control)), timeout_s_(timeout_s) {
    if (!control_) throw std::invalid_argument("make_nccl_communicator: no control communicator");
    // Failures are detected on the control channel: its watchdog serves both.
    set_failure_detector(failure_detector_of(*control_));
    try {
      setup();
    } catch (...) {
      abort();
      release_cuda();
      throw;
    }
  }

  ~NcclCommunicator() override {
    if (comm_) finalize();
    release_cuda();
  }

  int rank() const override { return control_->rank(); }
  int size() const override { return control_->size(); }
  int local_size() const override { return control_->local_size(); }

  void barrier() override { control_->barrier(); }

  void broadcast(void* data, size_t bytes, int root) override {
    cudaPointerAttributes attr{};
    const bool on_device =
        cudaPointerGetAttributes(&attr, data) == cudaSuccess && attr.type == cudaMemoryTypeDevice;
    cudaGetLastError();
    if (!on_device) {
      control_->broadcast(data, bytes, root);
      return;
    }
    std::vector<char> host(bytes);
    backend_.copy_to_host(host.data(), data, bytes);
    control_->broadcast(host.data(), bytes, root);
    backend_.copy_to_device(data, host.data(), bytes);
  }

  void allreduce_max(double* values, size_t n) override { control_->allreduce_max(values, n); }
  void allreduce_sum_u64(uint64_t* values, size_t n) override {
    control_->allreduce_sum_u64(values, n);
  }

  // Request::wait(): polls `done` until it completes, an error shows or the deadline passes;
  // then the current lane waits for it. Between polls it spins briefly, then sleeps on `signal`
  // (fired by the stream right after the exchange) for at most a control poll period.
  void wait_event(cudaEvent_t done, Signal& signal) {
    require_live();
    const Clock::time_point deadline = deadline_after(timeout_s_);
    Clock::time_point next_poll = Clock::now();
    int spins = 0;
    for (;;) {
      const cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) {
        cudaGetLastError();
        fail("all-to-all", std::string("cudaEventQuery: ") + cudaGetErrorString(q));
      }
      check_async("all-to-all");
      const Clock::time_point now = Clock::now();
      if (now >= next_poll) {
        poll_failures();
        next_poll = now + kControlPollPeriod;
      }
      if (now > deadline) {
        fail("all-to-all", "not complete after " + seconds_text() + " s");
      }
      if (++spins < 200) {
        std::this_thread::yield();
      } else {
        signal.wait_for(std::min<Clock::duration>(kControlPollPeriod, deadline - now));
      }
    }
    check(cudaStreamWaitEvent(backend_.lane_stream(), done, 0),
          "NCCL all-to-all: cudaStreamWaitEvent");
  }

 protected:
  std::unique_ptr<Request> do_ialltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                         const std::vector<size_t>& send_displs, void* recv,
                                         const std::vector<size_t>& recv_bytes,
                                         const std::vector<size_t>& recv_displs) override {
    const size_t n = static_cast<size_t>(size());
    const int me = rank();
    require_live();
    const auto* s = static_cast<const char*>(send);
    auto* r = static_cast<char*>(recv);
    // After what the current lane has queued (the momentum fold, the NS result).
    check(cudaEventRecord(ready_, backend_.lane_stream()), "NCCL all-to-all: cudaEventRecord");
    check(cudaStreamWaitEvent(stream_, ready_, 0), "NCCL all-to-all: cudaStreamWaitEvent");
    if (send_bytes[me] > 0) {
      check(cudaMemcpyAsync(r + recv_displs[me], s + send_displs[me], send_bytes[me],
                            cudaMemcpyDeviceToDevice, stream_),
            "NCCL all-to-all: cudaMemcpyAsync (own part)");
    }
    bool any = false;
    for (size_t p = 0; p < n; ++p) {
      if (int(p) == me) continue;
      any = any || send_bytes[p] > 0 || recv_bytes[p] > 0;
    }
    if (any) {
      ncclResult_t first = ncclGroupStart();
      for (size_t p = 0; p < n && first == ncclSuccess; ++p) {
        if (int(p) == me) continue;
        if (send_bytes[p] > 0) {
          first = ncclSend(s + send_displs[p], send_bytes[p], ncclUint8, int(p), comm_, stream_);
        }
        if (first == ncclSuccess && recv_bytes[p] > 0) {
          first = ncclRecv(r + recv_displs[p], recv_bytes[p], ncclUint8, int(p), comm_, stream_);
        }
      }
      const ncclResult_t end = ncclGroupEnd();
      if (first == ncclSuccess) first = end;
      if (first != ncclSuccess && first != ncclInProgress) {
        fail("all-to-all launch", nccl_text(first));
      }
      // Non-blocking: the group may still be connecting to peers; it is on the stream only
      // once the communicator's state leaves ncclInProgress.
      wait_ready("all-to-all launch", deadline_after(timeout_s_));
    }
    cudaEvent_t done = nullptr;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
          "NCCL all-to-all: cudaEventCreate");
    const cudaError_t err = cudaEventRecord(done, stream_);
    if (err != cudaSuccess) {
      cudaEventDestroy(done);
      check(err, "NCCL all-to-all: cudaEventRecord");
    }
    auto signal = std::make_shared<Signal>();
    auto* ref = new std::shared_ptr<Signal>(signal);  // the callback's, deleted there
    const cudaError_t hf = cudaLaunchHostFunc(stream_, fire_signal, ref);
    if (hf != cudaSuccess) {
      delete ref;
      cudaEventDestroy(done);
      check(hf, "NCCL all-to-all: cudaLaunchHostFunc");
    }
    return std::make_unique<NcclRequest>(*this, done, std::move(signal));
  }

  // poll(): after the control communicator's failure detection, NCCL's asynchronous error.
  void poll_transport() override {
    if (comm_) check_async("poll");
  }
  // A peer is gone (the control communicator's RankFailure): nothing in flight will complete.
  void on_peer_failure() noexcept override { abort(); }

 private:
  void setup() {
    check(cudaSetDevice(backend_.device()), "NCCL communicator: cudaSetDevice");
    // High priority: an exchange's kernels start ahead of the lanes' queued GEMMs, so the
    // pipeline's communication is not delayed behind up to four lanes of compute.
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest),
          "NCCL communicator: cudaDeviceGetStreamPriorityRange");
    check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest),
          "NCCL communicator: cudaStreamCreateWithPriority");
    check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming),
          "NCCL communicator: cudaEventCreate");
    // Rank 0's id goes to every rank; so does its failure to make one, so none waits for it.
    struct {
      int ok = 0;
      ncclUniqueId id{};
    } hello;
    std::string error;
    if (control_->rank() == 0) {
      const ncclResult_t r = ncclGetUniqueId(&hello.id);
      hello.ok = r == ncclSuccess;
      if (!hello.ok) error = std::string("ncclGetUniqueId: ") + ncclGetErrorString(r);
    }
    control_->broadcast(&hello, sizeof hello, 0);
    if (!hello.ok) {
      throw std::runtime_error(error.empty() ? "NCCL setup failed on rank 0 (ncclGetUniqueId)"
                                             : error);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r =
        ncclCommInitRankConfig(&comm_, control_->size(), hello.id, control_->rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      comm_ = nullptr;
      throw std::runtime_error(std::string("ncclCommInitRankConfig: ") + ncclGetErrorString(r));
    }
    wait_ready("NCCL setup (ncclCommInitRankConfig)", deadline_after(timeout_s_));
  }

  // Flush and free; a peer that is gone makes finalize stall, so it gets a deadline too, and
  // NCCL is aborted instead.
  void finalize() noexcept {
    const ncclResult_t fin = ncclCommFinalize(comm_);
    bool clean = fin == ncclSuccess || fin == ncclInProgress;
    const Clock::time_point deadline = deadline_after(std::min(timeout_s_, 30.0));
    Backoff backoff;
    while (clean) {
      ncclResult_t st = ncclInProgress;
      if (ncclCommGetAsyncError(comm_, &st) != ncclSuccess || st != ncclInProgress) {
        clean = st == ncclSuccess;
        break;
      }
      if (Clock::now() > deadline) {
        clean = false;
        break;
      }
      backoff.pause();
    }
    if (clean) {
      ncclCommDestroy(comm_);  // local resources only, once finalized
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }

  void release_cuda() noexcept {
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    ready_ = nullptr;
    stream_ = nullptr;
    cudaGetLastError();
  }

  std::string nccl_text(ncclResult_t r) const {
    std::string text = ncclGetErrorString(r);
    const char* last = comm_ ? ncclGetLastError(comm_) : nullptr;
    if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
    return text;
  }

  std::string seconds_text() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", timeout_s_);
    return buf;
  }

  void require_live() const {
    if (!comm_) {
      throw std::runtime_error("NCCL communicator was aborted after an earlier failure (step " +
                               std::to_string(step()) + ")");
    }
  }

  void abort() noexcept {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  void check_async(const char* what) {
    ncclResult_t st = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &st);
    if (r != ncclSuccess) fail(what, std::string("ncclCommGetAsyncError: ") + nccl_text(r));
    if (st != ncclSuccess && st != ncclInProgress) fail(what, nccl_text(st));
  }

  // Until the communicator leaves ncclInProgress (setup, a group launch).
  void wait_ready(const char* what, Clock::time_point deadline) {
    Clock::time_point next_poll = Clock::now();
    Backoff backoff;
    for (;;) {
      ncclResult_t st = ncclInProgress;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &st);
      if (r != ncclSuccess) fail(what, std::string("ncclCommGetAsyncError: ") + nccl_text(r));
      if (st == ncclSuccess) return;
      if (st != ncclInProgress) fail(what, nccl_text(st));
      const Clock::time_point now = Clock::now();
      if (now >= next_poll) {
        poll_failures();
        next_poll = now + kControlPollPeriod;
      }
      if (now > deadline) fail(what, "not done after " + seconds_text() + " s");
      backoff.pause();
    }
  }

  // Aborts NCCL, lets the control communicator name a dead rank (RankFailure), and otherwise
  // throws NCCL's error with the step.
  [[noreturn]] void fail(const std::string& what, const std::string& why) {
    const std::string text =
        "NCCL " + what + " failed at step " + std::to_string(step()) + ": " + why;
    abort();
    check_peers();
    throw std::runtime_error(text);
  }

  CudaBackend& backend_;
  std::unique_ptr<Communicator> control_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;  // every NCCL operation and own-part copy, in issue order
  cudaEvent_t ready_ = nullptr;    // the current lane's work before an exchange
};

void NcclRequest::wait() {
  if (finished_) return;
  finished_ = true;  // a failed wait is not retried (NCCL is aborted by then)
  comm_.wait_event(done_, *signal_);
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(CudaBackend& backend,
                                                     std::unique_ptr<Communicator> control,
                                                     double timeout_s) {
  return std::make_unique<NcclCommunicator>(backend, std::move(control), timeout_s);
}

}  // namespace muonplan::exec
