//===- Checkpoint.h - tessel-run's training checkpoints ---------*- C++ -*-===//
//
// `--save DIR [--save-every K]` and `--resume DIR` (docs/training.md). A
// checkpoint is a directory:
//
//   DIR/rank<R>.safetensors          every state buffer of rank R, by name
//                                    (__metadata__: its step, data_position)
//   DIR/losses.npy                   every step's loss (when known)
//   DIR/model.safetensors.index.json {"metadata": {"format":
//       "tessel-checkpoint", "step": S, "data_position": P, "ranks": N,
//       "total_size": BYTES}, "weight_map": {NAME: "rank0.safetensors", ...},
//       "layout": {...}, "files": {FILE: {"size": BYTES, "crc32c": C}, ...},
//       "index_crc32c": "XXXXXXXX"}
//
// (one rank: the names as they are, HuggingFace's sharded index; several:
// "rank<R>/NAME"), and "layout": {KEY: {"global_shape": [..], "offset":
// [..]}}, where each block lies in its whole state, so that a checkpoint
// loads on another mesh (StateBlocks.h). Every file is checked against its
// size and CRC-32C in "files" before use, the index against its own
// (index_crc32c: the CRC-32C of every byte before its value), and each rank
// file's step and data position against the index's: a corrupted
// checkpoint is refused with one message naming the file, what differs,
// what the index says and what was found (docs/training.md). A save is atomic: every rank writes into a fresh
// DIR.tmp-<pid of rank 0>, each file and the directory fsync'ed; then rank 0
// renames DIR to DIR.old, DIR.tmp-<pid> to DIR, and removes DIR.old. A kill
// at any moment leaves DIR, or DIR.old (the previous checkpoint, put back by
// recoverCheckpointDir), complete.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TOOLING_CHECKPOINT_H
#define TESSEL_TOOLING_CHECKPOINT_H

#include "tessel/runtime/Runtime.h"
#include "tessel/runtime/MappedFile.h"
#include "tessel/runtime/Store.h"
#include "tessel/tooling/StateBlocks.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::tooling {

/// Where a checkpoint stands in the training.
struct CheckpointInfo {
  int64_t step = 0;         // steps done since the start of training
  int64_t dataPosition = 0; // the next step's data row index
  int ranks = 1;
  /// Saving: the loss of every step from the training's first (`step` of
  /// them), on the rank that has them (else null): written as losses.npy
  /// in the checkpoint, so that a restarted training can give every loss.
  const std::vector<float> *losses = nullptr;
};

/// The losses.npy of checkpoint `dir`: `found` is false when it has none
/// (saved without the whole history, or by an older tessel-run).
runtime::Status readCheckpointLosses(const std::string &dir,
                                     std::vector<float> &losses, bool &found);

/// The ranks that save one checkpoint together (size 1: no comm, no store).
struct CheckpointGroup {
  int rank = 0, size = 1;
  runtime::Communicator *comm = nullptr;
  runtime::KVStore *store = nullptr;
  std::chrono::milliseconds timeout{30000};
  /// The saves this group made so far: with the step, the name of each
  /// save's keys in the store (every rank makes the same saves in the same
  /// order), so that two saves of one step never read each other's.
  int64_t saves = 0;
};

/// Rank 0, before the run: tidies up what a killed save left beside `dir`:
/// removes DIR.tmp-* (unfinished); puts DIR.old back as DIR when DIR is
/// missing (killed between the two renames), else removes it. With
/// `forSave`, refuses a DIR that exists but is not a checkpoint (a save
/// would replace it). Each action is reported on stderr.
runtime::Status recoverCheckpointDir(const std::string &dir, bool forSave);

/// Every rank of `group`: writes the checkpoint of `exec`'s states at
/// `info` into `dir` atomically.
runtime::Status saveCheckpoint(runtime::Executor &exec, const std::string &dir,
                               const CheckpointInfo &info,
                               CheckpointGroup &group);

/// Reads `dir`'s index (corrupt or missing: an error).
runtime::Status readCheckpointInfo(const std::string &dir,
                                   CheckpointInfo &info);

/// What readCheckpointInfo does once it has read the index: parses `text`,
/// the index read from `path` (named in errors). The checkpoint index fuzz
/// target calls it with its input, without a file per input.
runtime::Status parseCheckpointIndex(const std::string &path,
                                     const std::string &text,
                                     CheckpointInfo &info);

/// The index text `body` (its JSON up to its last member, without the
/// closing brace) sealed with its checksum: body + `"index_crc32c":
/// "XXXXXXXX"}` and a newline. The checkpoint index fuzz target seals its
/// inputs with it, so that they reach the parser.
std::string sealIndex(const std::string &body);
/// The index's entry of file `name` (its "files"): `"name": {"size": N,
/// "crc32c": C}` for its `bytes`.
std::string checkpointFileEntry(const std::string &name,
                                const std::string &bytes);
/// The same for a file of `size` bytes whose CRC-32C is `crc`.
std::string checkpointFileEntry(const std::string &name, uint64_t size,
                                uint32_t crc);

/// A checkpoint's states as their saved blocks (the rank files mapped).
struct SavedState {
  runtime::DType dtype;
  runtime::Shape global;
  std::vector<StateBlock> blocks;
};
struct SavedStates {
  std::string dir;
  CheckpointInfo info;
  std::map<std::string, SavedState> states;
  std::vector<std::shared_ptr<runtime::MappedFile>> files;
  /// Reads `dir`'s index and every rank file, checked against each other (a
  /// corrupt or truncated file, a file of another save: an error).
  runtime::Status read(const std::string &dir);
  /// The whole state `name`, put together from its blocks.
  runtime::Status assemble(const std::string &name, runtime::Tensor &out) const;
};

/// Loads `exec`'s states from `dir`, saved on this mesh or another: each
/// state's block (BufferInfo::globalShape, globalOffset) is copied from the
/// saved blocks that hold its parts, whichever rank files they lie in. The
/// checkpoint's names, dtypes and global shapes must be the program's (else
/// an error naming the first mismatch, nothing set). A state without a
/// recorded layout (BufferInfo::hasLayout) is rank `rank`'s own: it loads
/// from a checkpoint of `ranks` ranks only. With `subset`, the checkpoint
/// may hold more states than the program (the training's states for a
/// gradient program).
runtime::Status loadCheckpoint(runtime::Executor &exec, const std::string &dir,
                               int rank, int ranks, bool subset = false);

/// rm -rf `dir` (a temporary checkpoint).
runtime::Status removeCheckpointDir(const std::string &dir);

/// Test hook (TESSEL_RUN_TEST_HOOKS): TESSEL_TEST_SAVE_KILL=PHASE@STEP kills
/// the process (SIGKILL) during the save of step STEP: PHASE "write" after
/// its rank file, "swap" after DIR -> DIR.old, "cleanup" after the new DIR
/// is in place, before DIR.old is removed.
void saveKillHook(const char *phase, int64_t step);

} // namespace tessel::tooling

#endif // TESSEL_TOOLING_CHECKPOINT_H
