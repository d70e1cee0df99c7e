#include "backend_select.h"

#include "muonplan/base/error.h"

#ifdef MUONPLAN_HAVE_CUDA
#include "muonplan/exec/cuda_backend.h"
#include "muonplan/exec/cuda_device.h"
#endif
#ifdef MUONPLAN_HAVE_NCCL
#include "muonplan/exec/nccl_communicator.h"
#endif

namespace muonplan::cli {
namespace {

[[noreturn]] void unknown(const std::string& name) {
  if (name == "cuda") {
    throw InputError({}, "--backend",
                     "the CUDA backend is not built in this version (nvcc was not found at "
                     "configure time)");
  }
  throw InputError({}, "--backend",
                   "unknown backend '" + name + "' (known: " + known_backends() + ")");
}

}  // namespace

std::string known_backends() {
#ifdef MUONPLAN_HAVE_CUDA
  return "cpu, cpu-async, cuda";
#else
  return "cpu, cpu-async";
#endif
}

void prepare_backend_before_mpi(const std::string& name) {
#ifdef MUONPLAN_HAVE_CUDA
  if (name == "cuda") exec::set_cuda_device_before_mpi();
#else
  (void)name;
#endif
}

std::unique_ptr<exec::Backend> make_backend(const std::string& name, int device) {
  if (name == "cpu") return exec::make_cpu_backend();
  if (name == "cpu-async") return exec::make_cpu_async_backend({});
#ifdef MUONPLAN_HAVE_CUDA
  if (name == "cuda") return exec::make_cuda_backend(device);
#else
  (void)device;
#endif
  unknown(name);
}

std::unique_ptr<exec::Backend> make_execute_backend(const std::string& name,
                                                    std::unique_ptr<exec::Communicator>& comm,
                                                    double timeout_s,
                                                    const exec::CpuAsyncOptions& async,
                                                    bool host_staged) {
  if (name == "cpu" || name == "cpu-async") {
    std::unique_ptr<exec::Backend> backend =
        name == "cpu" ? exec::make_cpu_backend() : exec::make_cpu_async_backend(async);
    if (host_staged) {
      comm = exec::make_host_staged_communicator(*backend, std::move(comm));
    } else if (name == "cpu-async") {
      comm = exec::make_lane_ordered_communicator(*backend, std::move(comm));
    }
    return backend;
  }
#ifdef MUONPLAN_HAVE_CUDA
  if (name == "cuda") {
    std::unique_ptr<exec::CudaBackend> backend =
        exec::make_cuda_backend(exec::local_cuda_device(comm->rank(), comm->local_size()));
    // NCCL refuses two ranks on one device: ranks sharing a GPU stage through the host.
    if (comm->size() > 1 && (host_staged || comm->local_size() > exec::cuda_devices().count)) {
      comm = exec::make_host_staged_communicator(*backend, std::move(comm));
      return backend;
    }
#ifdef MUONPLAN_HAVE_NCCL
    comm = exec::make_nccl_communicator(*backend, std::move(comm), timeout_s);
#else
    (void)timeout_s;
    if (comm->size() != 1) {
      throw InputError({}, "--backend",
                       "cuda with " + std::to_string(comm->size()) +
                           " ranks needs NCCL, which this build lacks (one rank only)");
    }
    comm = exec::make_self_communicator(*backend);
#endif
    return backend;
  }
#else
  (void)comm;
  (void)timeout_s;
#endif
  unknown(name);
}

}  // namespace muonplan::cli
