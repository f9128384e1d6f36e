//===- AutoPlanSearch.h - --plan=auto's best-first weighing ------*- C++ -*-===//
//
// --plan=auto predicts every candidate's step, but lays out the memory
// (the buffer planner's search, most of a pipeline's prediction) only of
// those that may win: fastest first, until enough fit. A candidate's
// memory before it is laid out is a lower bound (the live bytes at its
// peak), so one whose bound exceeds the device is known not to fit without
// it. This is the policy alone, over step times and bytes, so that it can
// be tested against the exhaustive search (AutoPlanSearchTest); the driver
// (AutoPlan.cpp) gives it the compiles.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_DRIVER_AUTOPLANSEARCH_H
#define TESSEL_DRIVER_AUTOPLANSEARCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

namespace tessel::driver {

/// One candidate as the search sees it.
struct SearchCandidate {
  /// Its predicted step (seconds); nullopt: it does not compile.
  std::optional<double> stepTime;
  /// Its peak bytes per rank: laid out when `laidOut`, else a lower bound.
  double peak = 0;
  bool laidOut = false;
  /// Whether, found too big once laid out, it has a recomputed variant to
  /// try (a candidate outside a pipeline, not itself recomputed).
  bool recomputable = false;
};

/// What the search found, as indices into its candidates.
struct SearchResult {
  /// Those that fit, fastest first: the first is the choice.
  std::vector<size_t> fits;
  /// Those that do not fit (by their bound, or laid out).
  std::vector<size_t> tooBig;
  /// Those slower than the last that fit, whose bound fits: not laid out.
  size_t unweighed = 0;
};

/// The search's calls into the compiler.
struct SearchCallbacks {
  /// Lays out the memory of `ids` (at most `batch` of them, compiled at
  /// once): each gets laidOut and its planned peak, or loses its stepTime
  /// if it no longer compiles.
  llvm::function_ref<void(llvm::ArrayRef<size_t> ids)> layOut;
  /// Appends the recomputed variant of `id`, laid out, to the candidates,
  /// and returns its index (its stepTime nullopt if it does not compile).
  llvm::function_ref<size_t(size_t id)> addRecomputed;
};

/// Candidates by step time (ties in index order); those whose bound fits
/// are laid out, up to `batch` at a time, until `wanted` fit or none is
/// left. One found too big once laid out gets its recomputed variant, put
/// in its place by step time: recomputing adds work, so the variant is no
/// faster than its base, and the first `wanted` that fit are those of the
/// exhaustive search (every candidate and every variant laid out).
SearchResult searchBestFirst(std::deque<SearchCandidate> &candidates,
                             double limit, size_t wanted, size_t batch,
                             const SearchCallbacks &callbacks);

} // namespace tessel::driver

#endif // TESSEL_DRIVER_AUTOPLANSEARCH_H
