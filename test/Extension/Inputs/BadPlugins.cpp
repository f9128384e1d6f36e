//===- BadPlugins.cpp - plugins Tessel must refuse, one per variant -------===//
//
//   TESSEL_TEST_OLD_API             built against API version 0
//   TESSEL_TEST_DUPLICATE_SCHEDULE  registers "1f1b", a built-in's name
//   TESSEL_TEST_BAD_SCHEDULE        a schedule whose last rank runs a
//                                   backward before its forward
//   TESSEL_TEST_OTHER_VERSION       "example" at version 0.9 (an artifact
//                                   compiled with 1.0 must refuse it)
//
//===----------------------------------------------------------------------===//

#ifdef TESSEL_TEST_OLD_API
// What a plugin of an older API would have recorded.
#include "tessel/Extension/Version.h"
#undef TESSEL_EXTENSION_API_VERSION
#define TESSEL_EXTENSION_API_VERSION 0
#endif

#include "tessel/Extension/Plugin.h"

using namespace tessel::ext;

#if defined(TESSEL_TEST_OLD_API)
TESSEL_PLUGIN("old-api", "0.1") {}
#elif defined(TESSEL_TEST_DUPLICATE_SCHEDULE)
TESSEL_PLUGIN("dup-schedule", "1.0") {
  ScheduleDef s;
  s.name = "1f1b";
  s.description = "a second 1f1b";
  s.generate = [](const ScheduleParams &,
                  std::vector<std::vector<ScheduleStep>> &) { return ""; };
  registrar.addSchedule(s);
}
#elif defined(TESSEL_TEST_BAD_SCHEDULE)
TESSEL_PLUGIN("bad-schedule", "1.0") {
  ScheduleDef s;
  s.name = "backward-first";
  s.description = "backwards before forwards";
  s.generate = [](const ScheduleParams &p,
                  std::vector<std::vector<ScheduleStep>> &perRank) {
    using K = ScheduleStep::Kind;
    for (int32_t r = 0; r < p.ranks; ++r)
      for (int32_t mb = 0; mb < p.microbatches; ++mb) {
        perRank[r].push_back({K::BW, r, mb});
        perRank[r].push_back({K::F, r, mb});
      }
    return std::string();
  };
  registrar.addSchedule(s);
}
#elif defined(TESSEL_TEST_OTHER_VERSION)
TESSEL_PLUGIN("example", "0.9") {}
#endif
