//===- Launch.h - tessel-run's ranks: launching and joining -----*- C++ -*-===//
//
// `tessel-run ART -n N` launches N local rank processes (fork/exec of itself
// with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT) and
// watches them; a rank started by torchrun-style environments, mpirun or
// srun reads its rank and world from the environment and joins the others.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_LAUNCH_H
#define TESSEL_TOOLING_LAUNCH_H

#include "tessel/runtime/Communicator.h"
#include "tessel/runtime/Status.h"
#include "tessel/runtime/Store.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessel::tooling {

/// This process's place in the world.
struct WorldInfo {
  bool fromEnv = false;  // some launcher set the variables
  std::string source;    // "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", ...
  int rank = 0;
  int size = 1;
  int localRank = 0;
  std::string masterAddr;
  int masterPort = 0;
};

/// Reads RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/SIZE (mpirun),
/// PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS (srun), in that order, and
/// MASTER_ADDR/MASTER_PORT. An inconsistent environment is an error that
/// names the variable.
runtime::Status readWorld(WorldInfo &w);

/// A mesh's axes in order (name, size), as the artifact lists them.
using MeshAxes = std::vector<std::pair<std::string, int64_t>>;

/// Starts `n` copies of this program (same arguments) as local ranks and
/// waits for them, each bound to its share of the cores (TESSEL_BIND=none:
/// unbound; TESSEL_CORES tells the rank which); with fewer cores than
/// ranks, by their placement slots on `mesh`, and TESSEL_CORE_SHARED=1
/// tells them so (their shm waits do not spin: CommOptions::sharedCore;
/// a value in the environment stands). When one exits non-zero or
/// is killed, the others get a moment to report, then are killed; the
/// message names the rank. Returns the exit status for tessel-run.
int launchLocalRanks(int n, int argc, char **argv, const MeshAxes &mesh = {});

/// Where rank `rank` of `n` goes when ranks outnumber cores: ranks of
/// neighbouring slots share a core. The slot renumbers the rank's mesh
/// coordinates with the model axes (tp: every axis but pp and dp) most
/// significant, then pp, then dp: a tp group, which meets at every layer,
/// spreads over the cores, and the ranks that share a core are another
/// stage's or replica's, which wait while it computes. Measured on 2 cores,
/// ms per step, slot order against rank order: gpt2_tiny pp=2 x tp=2
/// (either mesh order) 4.1-4.8 against 8.5-10.0 (a stage per core) or
/// 4.4-5.6, gpt2_deep dp=2 x tp=2 20.1-21.7 against 21.8-24.8. A mesh that
/// does not multiply to `n`: the rank itself.
int placementSlot(int rank, int n, const MeshAxes &mesh);

/// Whether the launcher was stopped by SIGINT or SIGTERM (no restart then).
bool launcherStopped();

/// A rank's connection to the others: rank 0 hosts the store; everybody
/// connects to it and creates the communicator of `backend`'s memory: Gloo
/// for "cpu", wrapped in shm when every rank is on this host (TESSEL_COMM=
/// gloo: Gloo alone; =shm: shm or an error), NCCL for "cuda" (device
/// LOCAL_RANK modulo the devices seen).
class RankSession {
public:
  ~RankSession();
  struct SessionOptions {
    std::chrono::milliseconds timeout{30000};
    std::string backend = "cpu";
    /// Print the address each rank listens on, and why.
    bool verbose = false;
    /// The hang finder's options (--check-collectives).
    runtime::OpLogOptions log;
  };
  /// Joins the world; the communicator records every operation (the hang
  /// finder: runtime::opLogReport after a failure).
  runtime::Status start(const WorldInfo &w, const SessionOptions &options);
  runtime::Communicator *comm() const { return communicator.get(); }
  /// The store every rank shares (null before start).
  runtime::KVStore *kvStore() const { return store.get(); }
  /// After a successful run: waits for every rank, then leaves the store
  /// (rank 0 keeps serving until every rank has left).
  runtime::Status finish();

private:
  /// Gloo listens on the address of TESSEL_SOCKET_IFNAME (or
  /// GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME), else on the one from which
  /// this host routes to MASTER_ADDR; `verbose` prints which, and why.
  runtime::Status connect(const WorldInfo &w, std::chrono::milliseconds timeout,
                          const std::string &backend, bool verbose);

  WorldInfo world;
  bool finished = false;
  std::unique_ptr<runtime::TcpStoreServer> server;
  std::shared_ptr<runtime::TcpStore> store;
  std::unique_ptr<runtime::Communicator> communicator;
};

/// Test hooks (builds with TESSEL_RUN_TEST_HOOKS): TESSEL_TEST_CRASH_RANK=K
/// makes rank K exit with status 3, TESSEL_TEST_KILL_RANK=K kill itself with
/// SIGKILL, TESSEL_TEST_HANG_RANK=K sleep forever, right before its first
/// run, when every rank is connected; TESSEL_TEST_KILL_RANK_AFTER_MS=K:MS
/// has rank K killed by SIGKILL MS milliseconds after that point (mid-step).
void testHooks(int rank);
/// TESSEL_TEST_KILL_RANK_AT_STEP=K:S: rank K kills itself (SIGKILL) right
/// after step S (and its checkpoint, when one is due), in a first attempt
/// only (not with TESSEL_RESTART set): a restart then runs to the end.
void testStepHook(int rank, int64_t step);

/// What a test hook that fires does: stdout and stderr flushed, then this
/// process killed by SIGKILL (as a crash would, without cleanup).
void killForTest();

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_LAUNCH_H
