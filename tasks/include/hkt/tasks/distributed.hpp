// Data-parallel training across processes (docs/distributed.md).
//
//   mpirun -np 4 build/bin/hkt-train --task listops --model hkt-small --run-dir runs/x
//
// A process started by an MPI launcher (mpirun, or srun under Slurm) joins the
// job the first time world() is called (train() and resume() call it); one
// started without a launcher is a world of one and uses no MPI at all. The
// header needs no MPI: a build without it (HKT_MPI=OFF) has world() of size 1
// and refuses a launch with more processes (each would train alone).
#pragma once
#include <string>
#include <vector>

namespace hkt::tasks {

struct World {
  int rank = 0;        // 0 .. size - 1; rank 0 writes the run folder
  int size = 1;        // processes in the job
  int local_size = 1;  // processes on this machine (threads per rank default to cores / local_size)
  int local_rank = 0;  // this process among them (its GPU with --device cuda: cuda:local_rank)
};

// The job this process belongs to (joined once; MPI is finalized at exit).
// Throws hkt::Error when launched with several processes by a build without MPI.
const World& world();

// Whether this library was built with MPI (HKT_MPI).
bool built_with_mpi();

// Ends every process of the job with `status` (MPI_Abort in a world of more
// than one; std::exit otherwise), after flushing the standard streams. For an
// error seen by some ranks only, which would leave the others waiting.
[[noreturn]] void abort_job(int status);
// An executable's exit on an error: with several processes (under a launcher) the whole job ends
// with `status` (the others may wait in a collective); alone, it returns `status`.
int end_job(int status);

// Testing the GPU path on one GPU: on a CUDA device, a process alone (a world of one) sums its
// gradient buckets with a one-rank NCCL communicator, so that packing, ncclAllReduce and
// unpacking run; a sum over one rank leaves every bit as it was (tests/distributed_gpu_test.sh,
// through tests/helpers/train_faults.cpp). No effect without NCCL or on the CPU.
void sum_buckets_alone_with_nccl(bool on);

// "rank R of N: " in a world of more than one process, else "" (for messages).
std::string rank_prefix();

// --launcher of hkt-compare and hkt-eval (as "launcher" in an experiment file): the
// words of a launcher command ("mpirun -np 2": split at white space, no quoting).
// Throws hkt::Error for an empty command.
std::vector<std::string> launcher_words(const std::string& command);
// Replaces this process with `launcher... THIS_EXECUTABLE args...`, where args are
// argv[1..] without the option `option` and its value (as "--launcher CMD" or
// "--launcher=CMD"); the launcher is found on PATH. Returns only by throwing hkt::Error
// (it cannot be started, or this process already runs under a launcher).
[[noreturn]] void relaunch(const std::vector<std::string>& launcher, int argc, char** argv,
                           const std::string& option);

}  // namespace hkt::tasks
