//===- Run.cpp - Running an artifact: what tessel-run does ----------------===//
//
// The reporter, the launcher (-n N: the ranks as processes, restarted from
// the last checkpoint) and runArtifactMain; one rank's run is RankRun
// (RankRun.cpp).
//
//===----------------------------------------------------------------------===//
#include "tessel/tooling/Run.h"

#include "RunInternal.h"
#include "tessel/tooling/Checkpoint.h"
#include "tessel/tooling/Launch.h"
#include "tessel/tooling/Pipeline.h"
#include "tessel/tooling/Trace.h"
#include "tessel/ExtensionHost/Host.h"
#include "tessel/runtime/CustomOp.h"
#include "tessel/runtime/Runtime.h"
#include "tessel/runtime/Writable.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace tessel::runtime;

namespace tessel::tooling {

int usageError(const std::string &msg) { return RunReporter().usage(msg); }

int RunReporter::fail(const std::string &msg) const {
  std::fprintf(err, "tessel-run: %serror: %s\n", rankPrefix.c_str(),
               msg.c_str());
  for (const std::string &line : opLogReport(comm))
    std::fprintf(err, "tessel-run: %s%s\n", rankPrefix.c_str(), line.c_str());
  return 1;
}

int RunReporter::usage(const std::string &msg) const {
  std::fprintf(err, "tessel-run: %s (see tessel-run --help)\n", msg.c_str());
  return 2;
}

void RunReporter::print(const char *fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  std::vfprintf(out, fmt, args);
  va_end(args);
}

void RunReporter::note(const char *fmt, ...) const {
  va_list args;
  va_start(args, fmt);
  std::vfprintf(err, fmt, args);
  va_end(args);
}

void RunReporter::flush() const { std::fflush(out); }

/// The artifact must be compiled for as many ranks as were started (a
/// single process may still run one rank's program with --rank).
int checkRanks(const RunOptions &o, const RunReporter &out,
               const Artifact &artifact, int started, const std::string &how) {
  int compiled = artifact.numRanks();
  if (compiled == started || (started == 1 && o.rankGiven))
    return 0;
  return out.fail(o.artifact + " was compiled for " +
                  std::to_string(compiled) + " rank" +
                  (compiled == 1 ? "" : "s") + ", but " +
                  std::to_string(started) + (started == 1 ? " was" : " were") +
                  " started (" + how + ")" +
                  (started == 1 ? "; run it with -n " + std::to_string(compiled)
                                : ""));
}

/// Names a group of world ranks by the mesh axes along which its members
/// differ ("dp", "dp,tp"), the mesh's first axis major; "" when the group
/// is no such line or plane.
std::function<std::string(const std::vector<int> &)>
meshGroupNamer(std::vector<std::pair<std::string, int64_t>> mesh) {
  return [mesh](const std::vector<int> &group) -> std::string {
    if (mesh.empty() || group.empty())
      return "";
    auto coords = [&](int r) {
      std::vector<int64_t> c(mesh.size());
      for (size_t a = mesh.size(); a-- > 0;) {
        c[a] = r % mesh[a].second;
        r = static_cast<int>(r / mesh[a].second);
      }
      return c;
    };
    std::vector<int64_t> first = coords(group[0]);
    std::vector<bool> varies(mesh.size(), false);
    for (int r : group) {
      std::vector<int64_t> c = coords(r);
      for (size_t a = 0; a < mesh.size(); ++a)
        varies[a] = varies[a] || c[a] != first[a];
    }
    std::string name;
    int64_t count = 1;
    for (size_t a = 0; a < mesh.size(); ++a)
      if (varies[a]) {
        name += (name.empty() ? "" : ",") + mesh[a].first;
        count *= mesh[a].second;
      }
    return count == static_cast<int64_t>(group.size()) ? name : "";
  };
}

namespace {

/// The launcher's ranks, restarted up to --max-restarts times from the
/// last checkpoint of --save (each restart's ranks see TESSEL_RESTART=K),
/// placed on the cores by the artifact's `mesh` (Launch.h).
int launchWithRestarts(const RunOptions &o, const RunReporter &out, int argc,
                       char **argv, const MeshAxes &mesh) {
  std::vector<std::string> args(argv, argv + argc);
  for (int attempt = 0;; ++attempt) {
    std::vector<char *> ptrs;
    for (std::string &a : args)
      ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    if (attempt > 0)
      setenv("TESSEL_RESTART", std::to_string(attempt).c_str(), 1);
    int rc = launchLocalRanks(o.ranks, static_cast<int>(args.size()),
                              ptrs.data(), mesh);
    if (rc == 0 || attempt >= o.maxRestarts ||
        launcherStopped())
      return rc;
    // Resume from the last checkpoint, if the run saved one (else from
    // where the first attempt started).
    CheckpointInfo info;
    if (!readCheckpointInfo(o.train.save, info)) {
      out.note("tessel-run: restart %d of %d: no checkpoint in "
               "%s yet: from the start\n",
               attempt + 1, o.maxRestarts, o.train.save.c_str());
      continue;
    }
    out.note("tessel-run: restart %d of %d: the %d ranks again, from the "
             "checkpoint of step %lld in %s\n",
             attempt + 1, o.maxRestarts, o.ranks,
             static_cast<long long>(info.step), o.train.save.c_str());
    std::vector<std::string> next;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--resume") {
        ++i;
        continue;
      }
      if (args[i].rfind("--resume=", 0) == 0)
        continue;
      next.push_back(args[i]);
    }
    next.push_back("--resume");
    next.push_back(o.train.save);
    args = std::move(next);
  }
}

/// The launcher (-n N, no world in the environment): refuses a mismatch
/// once, here, then starts the ranks and merges their timelines and
/// traces.
int launcherMain(const RunOptions &o, const RunReporter &out, int argc,
                 char **argv) {
  std::unique_ptr<Artifact> artifact;
  LoadOptions lo;
  lo.verifyChecksums = false;
  if (Status s = Artifact::open(o.artifact, artifact, lo); !s)
    return out.fail(s.message());
  if (Status s = checkRequiredPlugins(artifact->manifest()); !s)
    return out.fail(s.message());
  if (int rc = checkRanks(o, out, *artifact, o.ranks,
                          "-n " + std::to_string(o.ranks)))
    return rc;
  if (o.rankGiven)
    return out.usage("--rank cannot be combined with -n");
  if (!o.trace.empty())
    if (Status s = checkWritable("--trace", o.trace); !s)
      return out.fail(s.message());
  if (!o.timeline.empty())
    if (Status s = checkWritable("--timeline", o.timeline); !s)
      return out.fail(s.message());
  int launched = launchWithRestarts(o, out, argc, argv, artifact->mesh());
  if (launched == 0 && !o.timeline.empty()) {
    if (Status s = mergeTimeline(
            o.timeline, o.ranks,
            o.artifact + ": " + std::to_string(o.ranks) + " ranks");
        !s)
      return out.fail(s.message());
    out.print("tessel-run: timeline of %d ranks -> %s\n", o.ranks,
              o.timeline.c_str());
  }
  if (launched == 0 && !o.trace.empty()) {
    if (Status s = mergeTraces(o.trace, o.ranks); !s)
      return out.fail(s.message());
    out.print("tessel-run: trace of %d ranks -> %s\n", o.ranks,
              o.trace.c_str());
  }
  return launched;
}

} // namespace

int runArtifactMain(const RunOptions &o, int argc, char **argv) {
  RunReporter out;
  for (const std::string &plugin : o.plugins)
    if (std::string err = tessel::ext::host::loadPlugin(plugin, "tessel-run");
        !err.empty())
      return out.fail(err);
  WorldInfo w;
  if (Status s = readWorld(w); !s)
    return out.usage("bad environment: " + s.message());
  if (w.fromEnv && w.size > 1)
    out.rankPrefix = "rank " + std::to_string(w.rank) + ": ";
  if (!w.fromEnv && o.ranks > 1)
    return launcherMain(o, out, argc, argv);
  return runRank(o, w, out);
}

} // namespace tessel::tooling
