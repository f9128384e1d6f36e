//===- AutoPlanSearchTest.cpp - --plan=auto's best-first weighing ---------===//
//
// The best-first search against the exhaustive one it replaces (every
// candidate and every recomputed variant of one too big laid out), on
// random candidates: the same first `wanted` that fit, in order, with
// fewer candidates laid out.
//
//===----------------------------------------------------------------------===//
#include "tessel/Driver/AutoPlanSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>

using namespace tessel::driver;

namespace {

/// A candidate as the compiler would give it: its laid-out peak, the bound
/// the search sees first, and its recomputed variant's figures.
struct Truth {
  std::optional<double> step;
  double exact = 0, bound = 0;
  bool recomputable = false;
  /// The variant: slower (it adds work), smaller.
  std::optional<double> variantStep;
  double variantExact = 0, variantBound = 0;
};

/// Who a search candidate is: (base, variant?).
using Id = std::pair<size_t, bool>;

struct Instance {
  std::vector<Truth> truth;
  double limit = 0;
};

Instance randomInstance(std::mt19937 &rng, size_t n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Instance in;
  in.limit = 100;
  for (size_t i = 0; i < n; ++i) {
    Truth t;
    if (u(rng) > 0.1)
      t.step = 1.0 + 9.0 * u(rng);
    t.exact = 40 + 100 * u(rng);
    t.bound = t.exact * (0.8 + 0.2 * u(rng));
    t.recomputable = u(rng) < 0.5;
    if (u(rng) > 0.1 && t.step)
      t.variantStep = *t.step * (1.0 + 0.5 * u(rng));
    t.variantExact = t.exact * (0.4 + 0.6 * u(rng));
    t.variantBound = t.variantExact * (0.8 + 0.2 * u(rng));
    in.truth.push_back(t);
  }
  return in;
}

/// Every candidate and every variant of a recomputable one too big, laid
/// out: those that fit, fastest first.
std::vector<Id> exhaustive(const Instance &in) {
  std::vector<std::pair<double, Id>> fits;
  for (size_t i = 0; i < in.truth.size(); ++i) {
    const Truth &t = in.truth[i];
    if (!t.step)
      continue;
    if (t.exact <= in.limit)
      fits.push_back({*t.step, {i, false}});
    else if (t.recomputable && t.variantStep && t.variantExact <= in.limit)
      fits.push_back({*t.variantStep, {i, true}});
  }
  std::stable_sort(fits.begin(), fits.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<Id> out;
  for (auto &f : fits)
    out.push_back(f.second);
  return out;
}

struct SearchRun {
  SearchResult result;
  std::vector<Id> ids;
  size_t laidOut = 0, largestBatch = 0;
};

/// The search as the driver runs it: bounds first, the variants of those
/// whose bound is too big made up front.
SearchRun bestFirst(const Instance &in, size_t wanted, size_t batch) {
  SearchRun run;
  std::deque<SearchCandidate> cands;
  auto add = [&](Id id, std::optional<double> step, double bound) {
    SearchCandidate c;
    c.stepTime = step;
    c.peak = bound;
    c.recomputable = !id.second && in.truth[id.first].recomputable;
    cands.push_back(c);
    run.ids.push_back(id);
  };
  for (size_t i = 0; i < in.truth.size(); ++i)
    add({i, false}, in.truth[i].step, in.truth[i].bound);
  for (size_t i = 0; i < in.truth.size(); ++i) {
    const Truth &t = in.truth[i];
    if (t.step && t.recomputable && t.bound > in.limit)
      add({i, true}, t.variantStep, t.variantBound);
  }
  auto layOut = [&](llvm::ArrayRef<size_t> ids) {
    EXPECT_LE(ids.size(), batch);
    run.largestBatch = std::max(run.largestBatch, ids.size());
    for (size_t k : ids) {
      EXPECT_FALSE(cands[k].laidOut) << "laid out twice";
      const Truth &t = in.truth[run.ids[k].first];
      cands[k].peak = run.ids[k].second ? t.variantExact : t.exact;
      ++run.laidOut;
    }
  };
  auto addRecomputed = [&](size_t k) {
    EXPECT_TRUE(cands[k].laidOut);
    EXPECT_FALSE(run.ids[k].second);
    const Truth &t = in.truth[run.ids[k].first];
    add({run.ids[k].first, true}, t.variantStep, t.variantExact);
    ++run.laidOut;
    return cands.size() - 1;
  };
  run.result = searchBestFirst(cands, in.limit, wanted, batch,
                               SearchCallbacks{layOut, addRecomputed});
  return run;
}

TEST(AutoPlanSearch, SameChoiceAsExhaustive) {
  std::mt19937 rng(20261202);
  size_t laidOut = 0, candidates = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    Instance in = randomInstance(rng, 1 + trial % 60);
    const std::vector<Id> all = exhaustive(in);
    for (size_t wanted : {1, 2, 8})
      for (size_t batch : {1, 2, 3}) {
        SearchRun run = bestFirst(in, wanted, batch);
        std::vector<Id> got;
        for (size_t k : run.result.fits)
          got.push_back(run.ids[k]);
        std::vector<Id> expected(
            all.begin(), all.begin() + std::min(wanted, all.size()));
        ASSERT_EQ(got, expected) << "trial " << trial << " wanted " << wanted
                                 << " batch " << batch;
        // Too big: each listed one is, by its bound or laid out.
        for (size_t k : run.result.tooBig) {
          const Truth &t = in.truth[run.ids[k].first];
          EXPECT_GT(run.ids[k].second ? t.variantExact : t.exact, in.limit);
        }
        if (wanted == 2 && batch == 2) {
          laidOut += run.laidOut;
          candidates += in.truth.size();
        }
      }
  }
  // Most candidates are never laid out (here about a tenth are).
  EXPECT_LT(laidOut, candidates / 4);
}

TEST(AutoPlanSearch, NothingFits) {
  Instance in;
  in.limit = 10;
  for (double step : {3.0, 1.0, 2.0}) {
    Truth t;
    t.step = step;
    t.exact = 20;
    t.bound = 5; // fits by its bound, not laid out
    in.truth.push_back(t);
  }
  SearchRun run = bestFirst(in, 2, 2);
  EXPECT_TRUE(run.result.fits.empty());
  EXPECT_EQ(run.result.tooBig.size(), 3u);
  EXPECT_EQ(run.result.unweighed, 0u);
  EXPECT_EQ(run.laidOut, 3u);
  // Fastest first.
  EXPECT_EQ(run.ids[run.result.tooBig[0]].first, 1u);
}

TEST(AutoPlanSearch, VariantTakesItsTurn) {
  // The fastest is too big once laid out; its variant (slower, smaller)
  // beats the third but not the second.
  Instance in;
  in.limit = 100;
  Truth a{1.0, 150, 90, true, 2.5, 60, 50};
  Truth b{2.0, 80, 70, false, std::nullopt, 0, 0};
  Truth c{3.0, 80, 70, false, std::nullopt, 0, 0};
  in.truth = {a, b, c};
  SearchRun run = bestFirst(in, 8, 1);
  std::vector<Id> got;
  for (size_t k : run.result.fits)
    got.push_back(run.ids[k]);
  EXPECT_EQ(got, (std::vector<Id>{{1, false}, {0, true}, {2, false}}));
  ASSERT_EQ(run.result.tooBig.size(), 1u);
  EXPECT_EQ(run.ids[run.result.tooBig[0]], (Id{0, false}));
}

TEST(AutoPlanSearch, StopsAtWanted) {
  Instance in;
  in.limit = 100;
  for (int i = 0; i < 10; ++i) {
    Truth t;
    t.step = double(i);
    t.exact = 50;
    t.bound = 40;
    in.truth.push_back(t);
  }
  Truth big;
  big.step = 20.0;
  big.exact = big.bound = 500;
  in.truth.push_back(big);
  SearchRun run = bestFirst(in, 2, 1);
  EXPECT_EQ(run.result.fits.size(), 2u);
  EXPECT_EQ(run.laidOut, 2u);
  EXPECT_EQ(run.result.unweighed, 8u);
  // The slower one whose bound is too big is listed as such.
  ASSERT_EQ(run.result.tooBig.size(), 1u);
  EXPECT_EQ(run.ids[run.result.tooBig[0]].first, 10u);
}

} // namespace
