//===- RegistryTest.cpp - the extension registries ------------------------===//
//
// The tables are process-wide: every test registers plugins and names of
// its own.
//
//===----------------------------------------------------------------------===//

#include "tessel/ExtensionHost/Host.h"

#include <gtest/gtest.h>

using namespace tessel::ext;
namespace host = tessel::ext::host;

namespace {

CustomOp unaryOp(const std::string &name, const std::string &opType,
                 int since) {
  CustomOp op;
  op.name = name;
  op.onnx = {"com.test", opType, since, {}};
  op.inferTypes = [](const std::vector<TensorType> &in, const Attrs &,
                     std::vector<TensorType> &out) {
    out = in;
    return std::string();
  };
  return op;
}

std::string load(const std::string &name, void (*registerAll)(Registrar &)) {
  return host::registerPlugin({name, "1.0", name + ".so"}, registerAll,
                              "test");
}

TEST(ExtensionRegistry, OnnxOpIsTheNewestNotNewerThanTheOpset) {
  ASSERT_EQ(load("versions", [](Registrar &r) {
              r.addOp(unaryOp("test.V1", "Versioned", 1));
              r.addOp(unaryOp("test.V5", "Versioned", 5));
              r.addOp(unaryOp("test.V9", "Versioned", 9));
            }),
            "");
  EXPECT_EQ(host::findOnnxOp("com.test", "Versioned", 1)->name, "test.V1");
  EXPECT_EQ(host::findOnnxOp("com.test", "Versioned", 7)->name, "test.V5");
  EXPECT_EQ(host::findOnnxOp("com.test", "Versioned", 20)->name, "test.V9");
  int oldest = -1;
  EXPECT_EQ(host::findOnnxOp("com.test", "Versioned", 0, &oldest), nullptr);
  EXPECT_EQ(oldest, 1);
  EXPECT_EQ(host::findOnnxOp("com.other", "Versioned", 9, &oldest), nullptr);
  EXPECT_EQ(oldest, 0);
  EXPECT_EQ(host::pluginOfOp("test.V5"), "versions");
}

TEST(ExtensionRegistry, ATakenOpNameNamesBothPlugins) {
  ASSERT_EQ(load("first", [](Registrar &r) {
              r.addOp(unaryOp("test.Taken", "Taken", 1));
            }),
            "");
  EXPECT_EQ(load("second", [](Registrar &r) {
              r.addOp(unaryOp("test.Taken", "Other", 1));
            }),
            "plugin 'second': op 'test.Taken' is already registered by "
            "plugin 'first'");
}

TEST(ExtensionRegistry, ATakenOnnxMappingIsRefused) {
  EXPECT_EQ(load("mapping", [](Registrar &r) {
              r.addOp(unaryOp("test.M1", "Mapped", 3));
              r.addOp(unaryOp("test.M2", "Mapped", 3));
            }),
            "plugin 'mapping': op 'test.M2' imports ONNX com.test.Mapped "
            "(since 3), which op 'test.M1' of plugin 'mapping' already "
            "imports");
}

// Each kind of definition names what it lacks: its name or its function.
TEST(ExtensionRegistry, IncompleteDefinitionsAreRefused) {
  EXPECT_EQ(load("incomplete", [](Registrar &r) {
              auto named = [](auto def, const char *name) {
                def.name = name;
                return def;
              };
              r.addOp(named(CustomOp(), "test.NoTypes"));
              r.addGradientHandler(named(GradientHandlerDef(), "no-handle"));
              r.addSchedule(named(ScheduleDef(), "no-generator"));
              r.addParallelMode(named(ParallelModeDef(), "no-split"));
              r.addOp(CustomOp());
              r.addSchedule(ScheduleDef());
              r.addGradientHandler(GradientHandlerDef());
              r.addParallelMode(ParallelModeDef());
            }),
            "plugin 'incomplete': op 'test.NoTypes' has no inferTypes\n"
            "plugin 'incomplete': gradient handler 'no-handle' has no handle "
            "function\n"
            "plugin 'incomplete': schedule 'no-generator' has no generator\n"
            "plugin 'incomplete': parallel mode 'no-split' has no split "
            "function\n"
            "plugin 'incomplete': an op without a name\n"
            "plugin 'incomplete': a schedule without a name\n"
            "plugin 'incomplete': a gradient handler without a name\n"
            "plugin 'incomplete': a parallel mode without a name");
}

TEST(ExtensionRegistry, APluginLoadsOnce) {
  ASSERT_EQ(load("once", [](Registrar &) {}), "");
  EXPECT_EQ(load("once", [](Registrar &) {}),
            "plugin 'once' (once.so) is already loaded from once.so");
}

TEST(ExtensionRegistry, HandlersAndModesByName) {
  ASSERT_EQ(load("named", [](Registrar &r) {
              GradientHandlerDef h;
              h.name = "test-handler";
              h.handle = [](GraphBuilder &, const GradientToReduce &,
                            Value &) { return std::string(); };
              r.addGradientHandler(h);
              ParallelModeDef m;
              m.name = "test-mode";
              m.split = [](int64_t,
                           std::vector<std::pair<std::string, int64_t>> &) {
                return std::string();
              };
              r.addParallelMode(m);
            }),
            "");
  EXPECT_NE(host::findGradientHandler("test-handler"), nullptr);
  EXPECT_EQ(host::pluginOfGradientHandler("test-handler"), "named");
  EXPECT_NE(host::findParallelMode("test-mode"), nullptr);
  EXPECT_EQ(host::findParallelMode("no-such-mode"), nullptr);
}

TEST(ExtensionRegistry, NotAPluginFileIsRefusedNamingIt) {
  std::string err = host::loadPlugin("/nonexistent/libnothing.so", "test");
  EXPECT_NE(err.find("cannot load plugin '/nonexistent/libnothing.so'"),
            std::string::npos)
      << err;
}

} // namespace
