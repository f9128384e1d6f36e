//===- AutoPlanSearch.cpp - --plan=auto's best-first weighing -------------===//

#include "tessel/Driver/AutoPlanSearch.h"

#include <algorithm>

namespace tessel::driver {

SearchResult searchBestFirst(std::deque<SearchCandidate> &candidates,
                             double limit, size_t wanted, size_t batch,
                             const SearchCallbacks &callbacks) {
  batch = std::max<size_t>(batch, 1);
  auto faster = [&](size_t a, size_t b) {
    return *candidates[a].stepTime < *candidates[b].stepTime;
  };
  auto compiles = [&](size_t i) { return candidates[i].stepTime.has_value(); };
  auto mayFit = [&](size_t i) {
    return !candidates[i].laidOut && candidates[i].peak <= limit;
  };
  std::vector<size_t> queue;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (compiles(i))
      queue.push_back(i);
  std::stable_sort(queue.begin(), queue.end(), faster);

  SearchResult result;
  size_t pos = 0;
  while (pos < queue.size() && result.fits.size() < wanted) {
    const size_t c = queue[pos];
    if (mayFit(c)) {
      // This one and the next whose bound fits, as many as may still be
      // wanted, at once.
      std::vector<size_t> ids;
      for (size_t i = pos; i < queue.size() && ids.size() < batch &&
                           result.fits.size() + ids.size() < wanted;
           ++i)
        if (mayFit(queue[i]))
          ids.push_back(queue[i]);
      callbacks.layOut(ids);
      // What no longer compiles leaves the queue; the rest are laid out.
      queue.erase(std::remove_if(queue.begin() + pos, queue.end(),
                                 [&](size_t i) { return !compiles(i); }),
                  queue.end());
      for (size_t i : ids)
        if (compiles(i))
          candidates[i].laidOut = true;
      continue;
    }
    ++pos;
    if (candidates[c].peak <= limit) {
      result.fits.push_back(c);
      continue;
    }
    result.tooBig.push_back(c);
    if (candidates[c].laidOut && candidates[c].recomputable) {
      const size_t r = callbacks.addRecomputed(c);
      if (compiles(r)) {
        candidates[r].laidOut = true;
        candidates[r].recomputable = false;
        queue.insert(std::upper_bound(queue.begin() + pos, queue.end(), r,
                                      faster),
                     r);
      }
    }
  }
  // The rest cannot win; those whose bound does not fit are known too big.
  for (; pos < queue.size(); ++pos) {
    if (candidates[queue[pos]].peak > limit)
      result.tooBig.push_back(queue[pos]);
    else
      ++result.unweighed;
  }
  return result;
}

} // namespace tessel::driver
