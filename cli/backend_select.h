// The backend (and for execute, the communicator) a command runs on, by its --backend name:
// `cpu` always, `cuda` when the build has the CUDA backend (MUONPLAN_HAVE_CUDA). The build's
// #ifdefs live here, not in the commands.
#pragma once

#include <memory>
#include <string>

#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/cpu_async_backend.h"

namespace muonplan::cli {

// "cpu, cpu-async" or "cpu, cpu-async, cuda": what execute's --backend accepts in this build.
std::string known_backends();

// The backend for a single-process command (bench) on CUDA device `device`. InputError (field
// --backend) for an unknown name, or for cuda in a build without it.
std::unique_ptr<exec::Backend> make_backend(const std::string& name, int device = 0);

// For execute. `cpu`: the CPU backend, `comm` unchanged. `cpu-async`: the CPU backend with
// asynchronous lanes (`async` its seed and delay), and `comm` ordered on its lanes. With
// `host_staged` (any backend), or for `cuda` when this node runs more ranks than it has GPUs,
// the all-to-alls are staged through pinned host memory over MPI instead
// (make_host_staged_communicator). `cuda`: the CUDA backend on this
// rank's device (its rank on the node modulo the devices visible), and `comm` becomes the NCCL
// communicator over the MPI one (all-to-alls in device memory with a deadline of timeout_s;
// everything else through MPI). In a build with CUDA but without NCCL, cuda runs one rank only
// (over the self communicator). InputError as make_backend; std::runtime_error when the device
// or NCCL cannot be set up.
std::unique_ptr<exec::Backend> make_execute_backend(const std::string& name,
                                                    std::unique_ptr<exec::Communicator>& comm,
                                                    double timeout_s,
                                                    const exec::CpuAsyncOptions& async = {},
                                                    bool host_staged = false);

// Before MPI_Init: for `cuda`, makes this rank's device (by its local rank from the launcher's
// environment) current, so a CUDA-aware MPI creates its context there and not on device 0.
// Does nothing for other backends, or when the device cannot be set (make_execute_backend
// reports that).
void prepare_backend_before_mpi(const std::string& name);

}  // namespace muonplan::cli
